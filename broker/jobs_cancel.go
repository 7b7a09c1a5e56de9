package broker

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/wire"
)

// jobCancelTimeout bounds a cancel once its Job's follow is stopped: the
// wait for the follow to end and the deletion on the spoke (each request
// to the spoke has its cluster's own request_timeout within it).
const jobCancelTimeout = 2 * time.Minute

// handleJobCancel answers job.cancel: the Job is deleted on its spoke and
// reported cancelled.
func (b *Broker) handleJobCancel(ctx context.Context, req *wire.Request) (any, error) {
	js := b.jobs
	var ref wire.JobRef
	if err := req.Decode(&ref); err != nil {
		return nil, api.BadRequest("%s: %v", req.Method, err)
	}
	if err := workspace.ValidID("job ID", ref.JobID); err != nil {
		return nil, err
	}
	rj := js.get(ref.JobID)
	if rj == nil {
		return nil, api.NotFound(api.CodeJobNotFound, "job %s is not followed by runtime broker %s", ref.JobID, b.cfg.BrokerID)
	}
	s := rj.spec
	log := b.jobLog(s.Cluster, s.JobID)
	// Once the follow is stopped the Job must be deleted (or followed
	// again) whatever becomes of this request: a cancel read from a
	// session the Hub has meanwhile closed (a broker frozen past its
	// heartbeat grace) has a dead context, and stopping there left the
	// Job running on its spoke with nobody following it, while the Hub's
	// queued copy of the cancel found no such Job and ended the row.
	// The report of the outcome goes through the outbox, which outlives
	// the session.
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), jobCancelTimeout)
	defer dcancel()
	// The follow (and a submit in flight) ends first, so that no submit
	// creates the Job after its deletion and no report follows cancelled.
	js.mu.Lock()
	rj.cancelling = true
	js.mu.Unlock()
	rj.cancel()
	select {
	case <-rj.done:
	case <-dctx.Done():
		return nil, workspace.ContextError(dctx.Err())
	}
	if err := js.cfg.Runner.Cancel(dctx, rj.spoke.Clients, s.Namespace, s.JobID, s.BrokerID); err != nil {
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
