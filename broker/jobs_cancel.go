package broker

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// handleJobCancel answers job.cancel: the Job is deleted on its spoke and
// reported cancelled.
func (b *Broker) handleJobCancel(ctx context.Context, req *wire.Request) (any, error) {
	js := b.jobs
	var ref wire.JobRef
	if err := req.Decode(&ref); err != nil {
		return nil, api.BadRequest("%s: %v", req.Method, err)
	}
	if err := validID("job ID", ref.JobID); err != nil {
		return nil, err
	}
	rj := js.get(ref.JobID)
	if rj == nil {
		return nil, api.NotFound(api.CodeJobNotFound, "job %s is not followed by runtime broker %s", ref.JobID, b.cfg.BrokerID)
	}
	s := rj.spec
	log := b.jobLog(s.Cluster, s.JobID)
	// The follow (and a submit in flight) ends first, so that no submit
	// creates the Job after its deletion and no report follows cancelled.
	js.mu.Lock()
	rj.cancelling = true
	js.mu.Unlock()
	rj.cancel()
	select {
	case <-rj.done:
	case <-ctx.Done():
		return nil, ctxError(ctx.Err())
	}
	if err := js.cfg.Runner.Cancel(ctx, rj.spoke.Clients, s.Namespace, s.JobID, s.BrokerID); err != nil {
		log.Warn("job not cancelled; following it again", "tier", s.Tier, "err", err)
		if again, fresh := js.add(b.runCtx, s, rj.spoke); fresh && !js.goJob(func() { b.runJob(again, false) }) {
			js.remove(again)
		}
		if ae := (*api.Error)(nil); errors.As(err, &ae) {
			return nil, ae
		}
		return nil, api.Errorf(api.CodeRuntimeError, "cancel job %s on cluster %s (%s tier): %v", s.JobID, s.Cluster, s.Tier, err)
	}
	now := time.Now().UTC()
	b.report(rj, wire.JobUpdate{State: api.JobStateCancelled, Message: "cancelled", FinishedAt: &now})
	log.Info("job cancelled")
	return struct{}{}, nil
}
