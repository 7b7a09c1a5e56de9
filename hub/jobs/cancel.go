package jobs

// Cancelling a Job (POST /jobs/{job}/cancel), and the cancels its broker
// could not take at once.
//
// The broker deletes the Job on its spoke and reports it cancelled
// (job.update) before it answers job.cancel. A broker that is offline, or
// that does not answer within jobCancelTimeout (frozen, or its channel
// lost), cannot confirm: the cancel is then queued in the Hub's offline
// dispatch queue (Queue; hub/dispatch_queue.go) as a job.cancel, its
// dispatch's AgentID holding the Job's ID (one pending cancel per Job),
// and the Job reads cancelling until the broker's report ends it. The
// queue delivers it (DeliverQueuedCancel), in order with the broker's
// other queued dispatches, when the broker says hello again. A broker deregistered meanwhile takes its queue with
// it; its cancelling Jobs end cancelled with the reason
// (EndCancelling).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// jobCancelTimeout bounds the wait for a broker's answer to job.cancel:
// the broker deletes the Job on its spoke first (a few API calls), so
// past this it is not answering, and the cancel is queued instead.
const jobCancelTimeout = 10 * time.Second

func (s *Service) jobCancelTimeout() time.Duration {
	if d := s.cancelWait.Load(); d > 0 {
		return time.Duration(d)
	}
	return jobCancelTimeout
}

// Messages of a Job whose cancel is queued, and of one ended by its
// broker's deregistration.
func msgCancelQueuedOffline(broker string) string {
	return fmt.Sprintf("cancel queued: runtime broker %q is offline; it is delivered when the broker reconnects", broker)
}

func msgCancelQueuedUnanswered(broker string, wait time.Duration) string {
	return fmt.Sprintf("cancel queued: runtime broker %q did not answer it within %s; it is sent again shortly, and when the broker reconnects", broker, wait)
}

func msgCancelledDeregistered(broker string) string {
	return fmt.Sprintf("cancelled: runtime broker %s was deregistered before it confirmed the cancel; nothing follows the Job on its cluster any more", broker)
}

// handleCancelJob is POST /jobs/{job}/cancel. A Job already cancelled is
// answered as it is (a retried cancel); one that finished otherwise is
// 409 invalid_phase. Else the broker is asked to delete it on its spoke
// and reports the cancelled state with job.update; the answer is the row
// as it is then. When the broker cannot confirm (offline, or no answer
// within jobCancelTimeout) the cancel is queued and the answer is 202
// with the Job cancelling. A cancel of a cancelling Job sends it again if
// the broker is online (the broker runs it once), and otherwise answers
// the one queued.
func (s *Service) handleCancelJob(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	j, err := s.loadJob(ctx, c, r)
	if err != nil {
		return 0, nil, err
	}
	b, err := s.store.GetBroker(ctx, j.BrokerID)
	if err != nil && !isNotFound(err) {
		return 0, nil, err
	}
	step, j, err := s.planCancelOf(ctx, c, j, isNotFound(err))
	switch {
	case err != nil:
		return 0, nil, err
	case step == plan.CancelAnswerAsIs:
		return http.StatusOK, jobView(j), nil
	case step == plan.CancelEndInLedger:
		return s.cancelInLedger(ctx, c, j, msgCancelledDeregistered(api.Quote(j.BrokerID)))
	}
	if ok, out, err := s.queueJobCancel(ctx, c, j, b, msgCancelQueuedOffline(b.Name), true); err != nil || ok {
		return queuedCancelAnswer(out, err)
	}
	return s.sendJobCancel(ctx, c, j, b)
}

// planCancelOf plans the cancel of j (plan.JobCancel) and carries out its
// one step that needs no broker: a run its broker has not answered ends
// in the ledger (then answered as it is), or, answered meanwhile, the
// cancel is planned again on the row as it is.
func (s *Service) planCancelOf(ctx context.Context, c *authz.Caller, j *store.Job, brokerMissing bool) (plan.JobCancelStep, *store.Job, error) {
	step, err := plan.JobCancel(j, brokerMissing)
	if err != nil || step != plan.CancelEndPending {
		return step, j, err
	}
	j, ended, err := s.endPendingJob(ctx, c, j)
	if err != nil || ended {
		return plan.CancelAnswerAsIs, j, err
	}
	if step, err = plan.JobCancel(j, brokerMissing); step == plan.CancelEndPending {
		step = plan.CancelSend // named by now, or it would have ended
	}
	return step, j, err
}

// sendJobCancel sends the cancel of j to its broker b, which is online,
// and answers as its outcome says (plan.JobCancelOutcome).
func (s *Service) sendJobCancel(ctx context.Context, c *authz.Caller, j *store.Job, b *store.Broker) (int, any, error) {
	// The client going away must not leave the cancel neither confirmed
	// nor queued.
	wait := s.jobCancelTimeout()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	err := s.hub.Dispatch(dctx, j.BrokerID, wire.MethodJobCancel, wire.JobRef{JobID: j.ID}, nil, jobCancelKey(j.ID))
	switch plan.JobCancelOutcome(err) {
	case plan.CancelUnfollowed:
		// Should the broker report it alive after all, ApplyUpdate
		// has it cancelled.
		return s.cancelInLedger(ctx, c, j, msgCancelledUnfollowed)
	case plan.CancelQueue:
		return s.queueUnansweredCancel(ctx, c, j, b, wait, err)
	case plan.CancelFailed:
		s.log.Warn("job cancel failed", "job", j.ID, "cluster", j.Cluster, "err", err)
		return 0, nil, err
	}
	s.log.Info("job cancel sent", "job", j.ID, "cluster", j.Cluster, "by", c.Principal())
	cur, err := s.store.GetJob(ctx, j.ID)
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeJobNotFound, "job")
	}
	return http.StatusOK, jobView(cur), nil
}

// endPendingJob ends in the ledger a Job whose run its broker has not
// answered (plan.JobCancel's plan.CancelEndPending). ended is false when the
// broker answered it meanwhile: j is then the row as it is.
func (s *Service) endPendingJob(ctx context.Context, c *authz.Caller, j *store.Job) (_ *store.Job, ended bool, _ error) {
	out, err := s.store.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
		if x.State != api.JobStatePending || x.Name != "" {
			return errJobUnchanged
		}
		now := time.Now().UTC()
		x.State, x.Message, x.FinishedAt = api.JobStateCancelled, msgCancelledPending, &now
		return nil
	})
	switch {
	case err == nil:
		s.log.Info("job cancelled before its run was answered", "job", j.ID, "cluster", cmpCluster(j.Cluster), "by", c.Principal())
		s.metrics.jobs.WithLabelValues(s.metrics.clusterLabel(j.Cluster), string(api.JobStateCancelled)).Inc()
		return out, true, nil
	case errors.Is(err, errJobUnchanged):
		cur, err := s.store.GetJob(ctx, j.ID)
		if err != nil {
			return nil, false, storeerr.Map(err, api.CodeJobNotFound, "job")
		}
		return cur, false, nil
	}
	return nil, false, storeerr.Map(err, api.CodeJobNotFound, "job")
}

// queueUnansweredCancel queues a cancel its broker did not answer (derr)
// within wait: plan.JobCancelOutcome's plan.CancelQueue.
func (s *Service) queueUnansweredCancel(ctx context.Context, c *authz.Caller, j *store.Job, b *store.Broker, wait time.Duration, derr error) (int, any, error) {
	s.log.Warn("job cancel not answered; queued", "job", j.ID, "cluster", j.Cluster, "broker_id", b.ID, "err", derr)
	msg := msgCancelQueuedUnanswered(b.Name, wait)
	if api.AsError(derr).Code == api.CodeBrokerOffline {
		msg = msgCancelQueuedOffline(b.Name) // it went offline (frozen: no heartbeat) while we waited
	}
	_, out, err := s.queueJobCancel(context.WithoutCancel(ctx), c, j, b, msg, false)
	if err == nil && !out.State.Terminal() {
		// A broker that stays connected says no hello that would drain
		// the queue: send it again on this session later.
		s.redeliverJobCancel(b.ID, j.ID)
	}
	return queuedCancelAnswer(out, err)
}

// queuedCancelAnswer is the answer to a cancel that queueJobCancel took:
// 202 while the Job is cancelling, 200 when it ended meanwhile.
func queuedCancelAnswer(j *store.Job, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	if j.State.Terminal() {
		return http.StatusOK, jobView(j), nil
	}
	return http.StatusAccepted, jobView(j), nil
}

// queueJobCancel queues job.cancel of Job j for broker b and shows the
// Job cancelling with msg; ok is false (nothing written) when onlyOffline
// and the broker is online, for the caller to send it. Deciding
// "offline" under the broker's queue lock is what keeps a cancel from
// landing behind a drain that has already finished (as the Hub's queued
// stops). A cancel already queued for the Job is the one kept. The
// dispatch is written before the Job: a Hub that dies in between leaves a
// cancel that is delivered, never a Job that reads cancelling with no
// cancel queued.
func (s *Service) queueJobCancel(ctx context.Context, c *authz.Caller, j *store.Job, b *store.Broker, msg string, onlyOffline bool) (bool, *store.Job, error) {
	defer s.hub.LockQueue(b.ID)()
	if onlyOffline && s.hub.BrokerOnline(b.ID) {
		return false, nil, nil
	}
	created, err := s.enqueueJobCancel(ctx, c.Principal(), j.ID, b.ID)
	if err != nil {
		return false, nil, err
	}
	out, err := s.store.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
		if x.State.Terminal() {
			return errJobUnchanged // the broker's report came first
		}
		x.State, x.Message = api.JobStateCancelling, msg
		return nil
	})
	if errors.Is(err, errJobUnchanged) {
		out, err = s.store.GetJob(ctx, j.ID)
	}
	if err != nil {
		return false, nil, storeerr.Map(err, api.CodeJobNotFound, "job")
	}
	if created {
		s.metrics.queued.Inc()
		s.log.Info("job cancel queued", "job", j.ID, "cluster", j.Cluster, "broker", b.Name, "broker_id", b.ID, "reason", msg, "by", c.Principal())
	}
	return true, out, nil
}

// enqueueJobCancel writes the queued job.cancel of Job jobID for broker
// brokerID (the queue's caller holds the broker's queue lock).
func (s *Service) enqueueJobCancel(ctx context.Context, createdBy, jobID, brokerID string) (bool, error) {
	body, err := json.Marshal(wire.JobRef{JobID: jobID})
	if err != nil {
		return false, err
	}
	d := &store.Dispatch{BrokerID: brokerID, AgentID: jobID, Method: wire.MethodJobCancel, Body: body, CreatedBy: createdBy}
	return s.store.EnqueueDispatch(ctx, d, nil)
}

// jobCancelRetryAfter is how long after a cancel went unanswered on a
// broker's current session the queued cancel is sent again on it (a
// multiple of the bounded wait: the broker was busy or frozen).
func (s *Service) jobCancelRetryAfter() time.Duration { return 3 * s.jobCancelTimeout() }

// queuedBatch is how many pending dispatches a resend reads, as a drain
// of the Hub's queue does.
const queuedBatch = 100

// redeliverJobCancel sends Job jobID's queued cancel again on broker
// brokerID's session after jobCancelRetryAfter, if that session is still
// current and ready and the cancel still pending: the queue is drained
// only at a hello, and a broker that answered its heartbeats but not the
// cancel may never say another. Under the broker's drain lock
// (Queue.OnReadySession), so that it never overlaps a drain; a session
// that ends first leaves the cancel to the next hello's drain.
func (s *Service) redeliverJobCancel(brokerID, jobID string) {
	s.hub.OnReadySession(brokerID, s.jobCancelRetryAfter(), func(ctx context.Context, sess Session) {
		ds, err := s.store.PendingDispatches(ctx, brokerID, queuedBatch)
		if err != nil {
			s.log.Warn("resending a queued job cancel", "job", jobID, "broker_id", brokerID, "err", err)
			return
		}
		for _, d := range ds {
			if d.Method == wire.MethodJobCancel && d.AgentID == jobID {
				s.log.Info("resending a job cancel its broker did not answer", "job", jobID, "broker_id", brokerID)
				s.DeliverQueuedCancel(ctx, sess, d)
				return
			}
		}
	})
}

// queueOrphanCancel queues job.cancel of Job jobID, which the ledger has
// ended already, for its offline broker brokerID, so that the broker
// deletes the Job on its spoke when it reconnects; ok is false when the
// broker is online (the caller sends it). createdBy says why.
func (s *Service) queueOrphanCancel(ctx context.Context, createdBy, jobID, brokerID string) (bool, error) {
	defer s.hub.LockQueue(brokerID)()
	if s.hub.BrokerOnline(brokerID) {
		return false, nil
	}
	_, err := s.enqueueJobCancel(ctx, createdBy, jobID, brokerID)
	return err == nil, err
}

// DeliverQueuedCancel sends one queued job.cancel on sess (the broker
// reports the Job cancelled before it answers) and records its outcome;
// the Hub's queue hands it every job.cancel it delivers. No answer is
// sent again as a queued stop is; a broker that follows no such Job
// leaves nothing to cancel, and a cancelling Job then ends cancelled in
// the ledger; a refusal (its spoke unreachable, say) leaves the Job
// cancelling with the reason, for a cancel again.
func (s *Service) DeliverQueuedCancel(ctx context.Context, sess Session, d *store.Dispatch) Outcome {
	var ref wire.JobRef
	_ = json.Unmarshal(d.Body, &ref)
	log := s.log.With("broker_id", d.BrokerID, "job", ref.JobID, "dispatch", d.ID, "method", d.Method)
	for {
		err := sess.SendQueued(ctx, d)
		switch {
		case err == nil:
			log.Info("queued job cancel delivered")
			return s.finishQueued(ctx, d, store.DispatchDelivered, string(api.JobStateCancelled))
		case api.IsCode(err, api.CodeJobNotFound):
			s.noteQueuedCancel(ctx, ref.JobID, func(x *store.Job) {
				now := time.Now().UTC()
				x.State, x.Message, x.FinishedAt = api.JobStateCancelled, msgCancelledUnfollowed, &now
			})
			log.Info("queued job cancel delivered: the broker follows no such job")
			return s.finishQueued(ctx, d, store.DispatchDelivered, api.CodeJobNotFound)
		case api.IsCode(err, api.CodeBrokerUnavailable), api.IsCode(err, api.CodeBrokerTimeout):
			n, nerr := s.store.NoteDispatchAttempt(ctx, d.ID, api.AsError(err).Error())
			if nerr != nil {
				log.Error("queued job cancel: counting an attempt", "err", nerr)
				return QueuedRetry
			}
			if n >= s.maxQueuedAttempts {
				log.Error("queued job cancel failed: no answer after repeated attempts", "attempts", n, "err", err)
				s.noteQueuedCancel(ctx, ref.JobID, func(x *store.Job) {
					x.Message = cleanText("queued cancel not answered by the runtime broker after repeated attempts; cancel it again", maxJobMessage)
				})
				return s.finishQueued(ctx, d, store.DispatchFailed, api.AsError(err).Error())
			}
			if sess.Ended() || ctx.Err() != nil {
				return QueuedChannelGone
			}
			log.Warn("queued job cancel: no answer; sending it again", "attempts", n, "err", err)
		default:
			log.Warn("queued job cancel refused by the runtime broker", "err", err)
			s.noteQueuedCancel(ctx, ref.JobID, func(x *store.Job) {
				x.Message = cleanText("queued cancel refused by the runtime broker: "+api.AsError(err).Message+"; cancel it again", maxJobMessage)
			})
			return s.finishQueued(ctx, d, store.DispatchFailed, api.AsError(err).Error())
		}
	}
}

// finishQueued records queued dispatch d's final status and result: the
// cancel is done, unless that failed (it is sent again after a pause,
// harmlessly: same key).
func (s *Service) finishQueued(ctx context.Context, d *store.Dispatch, status, result string) Outcome {
	if !s.hub.FinishQueued(ctx, d, status, result) {
		return QueuedRetry
	}
	return QueuedDone
}

// noteQueuedCancel applies f to Job id if it is still cancelling (a Job
// the ledger or the broker's report ended is left as it is).
func (s *Service) noteQueuedCancel(ctx context.Context, id string, f func(*store.Job)) {
	out, err := s.store.UpdateJobWith(ctx, id, func(x *store.Job) error {
		if x.State != api.JobStateCancelling {
			return errJobUnchanged
		}
		f(x)
		return nil
	})
	switch {
	case err == nil:
		if out.State.Terminal() {
			s.metrics.jobs.WithLabelValues(s.metrics.clusterLabel(out.Cluster), string(out.State)).Inc()
		}
	case errors.Is(err, errJobUnchanged), isNotFound(err):
	default:
		s.log.Error("queued job cancel: recording its outcome", "job", id, "err", err)
	}
}

// EndCancelling ends the cancelling Jobs of broker b, just
// deregistered (its queued cancels went with it): nothing can confirm
// them any more, so they end cancelled, saying why.
func (s *Service) EndCancelling(ctx context.Context, b *store.Broker) {
	page := store.Page{Limit: 500}
	for {
		items, next, _, err := s.store.ListJobs(ctx, store.JobFilter{BrokerID: b.ID, State: api.JobStateCancelling}, page)
		if err != nil {
			s.log.Warn("ending a deregistered broker's cancelling jobs", "broker_id", b.ID, "err", err)
			return
		}
		for _, j := range items {
			s.noteQueuedCancel(ctx, j.ID, func(x *store.Job) {
				now := time.Now().UTC()
				x.State, x.Message, x.FinishedAt = api.JobStateCancelled, msgCancelledDeregistered(api.Quote(b.Name)), &now
			})
			s.log.Info("cancelling job ended with its deregistered broker", "job", j.ID, "cluster", j.Cluster, "broker", b.Name, "broker_id", b.ID)
		}
		if next == "" {
			return
		}
		page.Cursor = next
	}
}
