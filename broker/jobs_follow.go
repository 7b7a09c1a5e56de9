package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"
)

// Submitting and following a Job, and its reports to the Hub.

// report queues a Job's update unless a terminal one already was; it
// says whether it queued it.
func (b *Broker) report(rj *runningJob, u wire.JobUpdate) bool {
	js := b.jobs
	js.mu.Lock()
	if rj.ended {
		js.mu.Unlock()
		return false
	}
	if u.State.Terminal() {
		rj.ended = true
	}
	js.mu.Unlock()
	u.JobID = rj.spec.JobID
	where := accepted(rj.spec) // for a Hub that lost job.run's answer
	u.Where = &where
	js.outbox.put(rj.spec.Cluster, u)
	if u.State.Terminal() {
		js.marks.clear(u.JobID) // the outbox keeps the end now
	}
	return true
}

// runJob submits (when submit) and follows one Job until it is terminal,
// its deadline and margin pass, or the broker stops (a restarted broker
// follows it again: Owned).
func (b *Broker) runJob(rj *runningJob, submit bool) {
	js := b.jobs
	s := rj.spec
	log := b.jobLog(s.Cluster, s.JobID)
	ctx := rj.ctx
	defer close(rj.done)
	defer js.remove(rj)
	if submit {
		select {
		case <-js.sweptCh(s.Cluster):
		case <-ctx.Done():
		}
		if err := js.cfg.Runner.Submit(ctx, rj.spoke.Clients, s); err != nil {
			if b.runCtx.Err() != nil || js.isCancelling(rj) {
				return
			}
			log.Warn("job not submitted", "tier", s.Tier, "err", err)
			b.report(rj, wire.JobUpdate{State: api.JobStateError, Message: "not submitted",
				Error: jobError(s, fmt.Sprintf("submit: %v", err))})
			return
		}
		js.marks.clear(s.JobID) // on the spoke now: a restart sweeps or follows it
		log.Info("job submitted", "tier", s.Tier, "namespace", s.Namespace, "name", jobs.Name(s.JobID))
	}
	fo := js.cfg.FollowOptions
	if fo.Logger == nil {
		// The runner's lines (a poll failing, the Job's end) are the
		// broker's, with its broker_id; it adds cluster and job.
		fo.Logger = b.log
	}
	if c := rj.spoke.Cluster; c != nil && c.StatusRetry.D > 0 {
		fo.RetryFor = c.StatusRetry.D
	}
	last := js.cfg.Runner.Follow(ctx, rj.spoke.Clients, s, fo, func(p jobs.Progress) {
		if !p.Unreachable { // not the end: settle decides it
			b.report(rj, updateOf(p))
		}
	})
	switch {
	case last.Unreachable && !js.isCancelling(rj) && b.runCtx.Err() == nil:
		b.settle(rj, fo, last)
	case last.State == api.JobStateError && last.StartedAt == nil && !js.isCancelling(rj) && b.runCtx.Err() == nil:
		// Given up before it started (its spoke unreachable for too long,
		// credentials refused): a Job left suspended there could be
		// admitted later and run with nobody following it, so it is
		// deleted when the spoke lets us; else the next start's sweep
		// does.
		dctx, cancel := context.WithTimeout(b.runCtx, 30*time.Second)
		err := js.cfg.Runner.Cancel(dctx, rj.spoke.Clients, s.Namespace, s.JobID, s.BrokerID)
		cancel()
		if err != nil {
			log.Warn("job given up before it started; not deleted from its spoke (the next start's sweep will)", "err", err)
		} else {
			log.Info("job given up before it started; deleted from its spoke")
		}
		b.report(rj, updateOf(last))
	case last.State.Terminal():
		b.report(rj, updateOf(last)) // the runner logged its end
	case js.isCancelling(rj):
	case b.runCtx.Err() != nil:
		log.Info("broker stopping: job left running on its spoke, followed again at the next start")
	default:
		// The runner ended its follow without a final state and nobody
		// asked it to stop (it bounds a started Job by its deadline and
		// followMargin).
		if b.report(rj, wire.JobUpdate{State: api.JobStateError, Message: "not followed to its end",
			Error: jobError(s, fmt.Sprintf("the job was not followed to its end (deadline %v, margin %v)", s.Deadline, followMargin))}) {
			log.Warn("job given up: its follow ended without a final state", "deadline", s.Deadline)
		}
	}
}

func jobError(s jobs.Spec, msg string) *api.JobError {
	return &api.JobError{Status: "error", Cluster: s.Cluster, Tier: s.Tier, Message: msg}
}

// updateOf is a Progress as a job.update.
func updateOf(p jobs.Progress) wire.JobUpdate {
	return wire.JobUpdate{State: p.State, Message: p.Message, StartedAt: p.StartedAt, FinishedAt: p.FinishedAt,
		ExitCode: p.ExitCode, Result: p.Result, Error: p.Error, Logs: p.Logs, Trace: p.Trace}
}
