package broker

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/spoke/jobs"
)

// A Job given up because its spoke stopped answering (status_retry) may
// still run there: ending it in the Hub's ledger at once would leave it
// spending GPU time with nobody to read it, and its real end refused. So
// the ledger keeps it non-terminal, with a message that says it was
// given up, while the broker keeps asking the spoke; at the first answer
// the Job is ended there (jobs.Settle): a Job that finished meanwhile is
// read once more and its real outcome recorded, one that still runs or
// waits is deleted and ends with the typed error. A started Job's own
// deadline (activeDeadlineSeconds, enforced by the spoke) bounds the
// wait: past it the spoke has stopped the Job, and the error is true.

// errNoAnswer stands for a spoke that has not answered yet.
var errNoAnswer = errors.New("no answer yet")

// startSlack is added to Progress.SeenRunningAt when it stands in for a
// start time never read: the Job controller sets status.startTime (from
// which the spoke counts the deadline) on its first sync, a moment after
// a poll may have seen the Job unsuspended.
const startSlack = 5 * time.Second

// startOf is when a given-up Job's deadline started counting, as far as
// the broker knows (nil: it never ran).
func startOf(p jobs.Progress) *time.Time {
	switch {
	case p.StartedAt != nil:
		return p.StartedAt
	case p.SeenRunningAt != nil:
		t := p.SeenRunningAt.Add(startSlack)
		return &t
	}
	return nil
}

// settleBackoff bounds the retries' spacing (from the poll interval).
const settleBackoff = 30 * time.Second

// settleDecision is what to do next with a given-up Job, from what the
// spoke said (err: it said nothing) and the clock.
type settleDecision int

const (
	settleRetry   settleDecision = iota // ask again later
	settleFollow                        // finished there: read its outcome
	settleEnd                           // deleted or gone: report the error
	settleExpired                       // its deadline passed: the spoke stopped it
)

// decideSettle is the pure part of settle.
func decideSettle(got jobs.Settled, err error, startedAt *time.Time, deadline time.Duration, now time.Time) settleDecision {
	switch {
	case err == nil && got == jobs.SettledFinished:
		return settleFollow
	case err == nil:
		return settleEnd
	case startedAt != nil && deadline > 0 && now.After(startedAt.Add(deadline)):
		return settleExpired
	}
	return settleRetry
}

// settle is the follow of a Job given up while its spoke was unreachable
// (last, with Unreachable set), until its end is known or its context
// ends (a cancel, the broker stopping: a restarted broker follows it
// again from its spoke).
func (b *Broker) settle(rj *runningJob, fo jobs.FollowOptions, last jobs.Progress) {
	js := b.jobs
	s := rj.spec
	log := b.jobLog(s.Cluster, s.JobID)
	last.Unreachable = false
	started := startOf(last)
	if decideSettle("", errNoAnswer, started, s.Deadline, time.Now()) == settleExpired {
		b.report(rj, updateOf(last)) // past its deadline: the spoke has stopped it
		return
	}
	interim := last
	interim.State, interim.Error, interim.FinishedAt, interim.Unreachable = api.JobStateQueued, nil, nil, false
	if started != nil {
		interim.State = api.JobStateRunning
	}
	interim.Message = last.Message + "; given up: the Job is ended on the spoke when it answers again"
	b.report(rj, updateOf(interim))
	log.Warn("job given up: its spoke is unreachable; it is ended there when the spoke answers again", "tier", s.Tier)

	wait := cmpOr(fo.PollInterval, jobs.DefaultPollInterval)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-rj.ctx.Done():
			log.Info("job given up and not yet ended on its spoke; followed again at the next start")
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(rj.ctx, settleBackoff)
		got, err := js.cfg.Runner.Settle(ctx, rj.spoke.Clients, s.Namespace, s.JobID, s.BrokerID)
		cancel()
		if rj.ctx.Err() != nil {
			continue
		}
		end := last
		switch decideSettle(got, err, started, s.Deadline, time.Now()) {
		case settleFollow:
			log.Info("job given up finished on its spoke meanwhile; reading its outcome")
			fo.Deadline = 0
			out := js.cfg.Runner.Follow(rj.ctx, rj.spoke.Clients, s, fo, nil)
			if out.State.Terminal() && !out.Unreachable {
				b.report(rj, updateOf(out))
				return
			}
			if rj.ctx.Err() != nil {
				continue
			}
		case settleEnd:
			if got == jobs.SettledDeleted {
				end.Message += "; deleted from the spoke when it answered again"
			} else {
				end.Message += "; the Job is gone from the spoke"
			}
			log.Info("job given up; ended on its spoke", "found", string(got))
			b.report(rj, updateOf(end))
			return
		case settleExpired:
			end.Message += "; its deadline has passed since, so the spoke has stopped it"
			log.Warn("job given up; its spoke never answered before its deadline", "err", err)
			b.report(rj, updateOf(end))
			return
		default:
			log.Debug("job given up: its spoke still does not answer", "err", err)
		}
		wait = min(2*wait, settleBackoff)
		t.Reset(wait)
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
