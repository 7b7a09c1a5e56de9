package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/channel"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// Dispatches for offline brokers.
//
// The spec queues one operation for a Runtime Broker that is offline: a
// stop. It is answered 202 Accepted, stored in the database
// (store.DispatchQueue) in the same transaction that shows the agent
// stopped with container status stop_queued, and delivered when the broker
// reconnects. Every other operation on an offline broker is refused at once
// with 503 runtime_broker_offline. A project delete also queues the
// project's cleanup (project.cleanup) for an offline broker whose runtime
// keeps project resources; such a dispatch carries the project ID in
// AgentID (project_cleanup.go). A Job cancel its broker could not confirm
// is queued too (job.cancel, the Job's ID in AgentID: hub/jobs/cancel.go).
//
// Order: onHello reconciles the broker's inventory, makes the session
// current but not ready, and starts drainQueue. Until drainQueue has
// delivered every pending dispatch (in enqueue order, one at a time)
// dispatch() holds back every other command to that broker, so nothing
// overtakes a queued stop. A stop is queued only while the broker has no
// current session, decided under the broker's queue lock; drainQueue
// declares the queue empty under the same lock, so a stop cannot be queued
// behind a drain that has already finished.
//
// Exactly once: each delivery carries the dispatch's durable key
// ("queued:<id>", or the caller's Idempotency-Key). A dispatch stays
// pending until its answer is applied, so a Hub or connection failure
// after the broker acted only means it is sent again, with the same key,
// and the broker (whose idempotency store survives its restarts) answers
// from its record instead of acting twice.
//
// Capacity: a stop_queued agent keeps whatever slot it held. The slot is
// released when the stop's answer shows the container exited, or when an
// inventory shows it exited or gone (reconcile.go).

const (
	// drainBatch is how many pending dispatches one read fetches.
	drainBatch = 100
	// maxQueuedAttempts bounds the deliveries of one dispatch that end
	// without an answer (timeouts, lost channels), across sessions; then
	// it is marked failed rather than blocking the broker's queue forever.
	maxQueuedAttempts = 5
	// finishedRetention is how long finished dispatches stay as a record
	// (pruned by the janitor).
	finishedRetention = 7 * 24 * time.Hour
)

// brokerLocks hands out one mutex per broker and purpose.
type brokerLocks struct{ m sync.Map }

func (l *brokerLocks) get(brokerID string) *sync.Mutex {
	mu, _ := l.m.LoadOrStore(brokerID, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

// queueStop queues a stop for agent a on broker b if b is offline, and
// answers 202 with the agent and the queued dispatch; ok is false (and
// nothing is written) when the broker is online, so the caller dispatches
// as usual. A stop already queued for the agent is the one answered.
func (s *Server) queueStop(ctx context.Context, c *Caller, a *store.Agent, b *store.Broker, key string) (ok bool, view api.Agent, err error) {
	mu := s.queueLock.get(b.ID)
	mu.Lock()
	defer mu.Unlock()
	if s.disp.Online(b.ID) {
		return false, view, nil
	}
	for range 20 {
		cur, err := s.store.GetAgent(ctx, a.ID)
		if err != nil {
			return false, view, storeerr.Map(err, api.CodeAgentNotFound, "agent")
		}
		body, err := json.Marshal(wire.AgentRef{AgentID: cur.ID, RunID: cur.RunID, Pin: cur.Pin})
		if err != nil {
			return false, view, err
		}
		d := &store.Dispatch{BrokerID: b.ID, AgentID: a.ID, RunID: cur.RunID, Method: wire.MethodAgentStop,
			Body: body, Key: key, CreatedBy: c.Principal()}
		next := *cur
		next.Phase, next.ContainerStatus = lifecycle.QueuedStop.Phase, lifecycle.QueuedStop.Container
		next.StatusMessage = fmt.Sprintf("stop queued: runtime broker %q is offline; the stop is delivered when it reconnects", b.Name)
		next.UpdatedAt = time.Now().UTC()
		created, err := s.store.EnqueueDispatch(ctx, d, &next)
		if isConflict(err) {
			continue // the agent changed under us: queue against its new state
		}
		if err != nil {
			return false, view, err
		}
		shown := cur
		if created {
			shown = &next
			s.metrics.queued.Inc()
			s.log.Info("stop queued for offline runtime broker", "broker", b.Name, "broker_id", b.ID,
				"agent_id", a.ID, "dispatch", d.ID, "seq", d.Seq)
		}
		view = s.agentView(ctx, shown, map[string]string{b.ID: b.Name})
		view.QueuedDispatch = &api.QueuedDispatch{ID: d.ID, Action: "stop", Status: d.Status, QueuedAt: d.CreatedAt}
		return true, view, nil
	}
	return false, view, api.Conflict(api.CodeConflict, "agent is being changed concurrently; try again")
}

// drainQueue delivers the dispatches queued for sess's broker, in order,
// then marks the session ready. It returns early, leaving the rest
// pending for the next session, when the channel ends. A database error
// is retried with backoff (the session stays not ready meanwhile: nothing
// may overtake the queue). Drains of one broker never overlap: a
// replacing session's drain waits for the old one to notice its channel
// is gone.
func (s *Server) drainQueue(sess *channel.Session) {
	dl := s.drainLock.get(sess.BrokerID)
	dl.Lock()
	defer dl.Unlock()
	ctx := s.systemCtx() // delivering what was queued is the Hub's own work
	failed := false
	backoff := 100 * time.Millisecond
	pause := func() {
		select {
		case <-time.After(backoff):
		case <-sess.Conn.Done():
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	for {
		if sess.Done() || ctx.Err() != nil {
			return
		}
		ds, err := s.store.PendingDispatches(ctx, sess.BrokerID, drainBatch)
		if err != nil {
			s.log.Error("reading queued dispatches", "broker_id", sess.BrokerID, "err", err)
			pause()
			continue
		}
		if len(ds) == 0 {
			if s.markReadyIfEmpty(ctx, sess) {
				break
			}
			continue
		}
	batch:
		for _, d := range ds {
			switch s.deliverQueued(ctx, sess, d) {
			case queuedFailed:
				failed = true
			case queuedChannelGone:
				return
			case queuedRetry:
				pause()
				break batch // read the queue again: this dispatch is still first
			}
		}
	}
	if failed {
		// A stop that failed may have left its container in any state:
		// let the broker's inventory say which, and set the slots by it.
		s.refreshInventory(ctx, sess)
	}
}

// markReadyIfEmpty makes the session ready if the broker's queue is empty,
// checked under the queue lock so that no stop is queued in between.
func (s *Server) markReadyIfEmpty(ctx context.Context, sess *channel.Session) bool {
	mu := s.queueLock.get(sess.BrokerID)
	mu.Lock()
	defer mu.Unlock()
	ds, err := s.store.PendingDispatches(ctx, sess.BrokerID, 1)
	if err != nil || len(ds) > 0 {
		return false
	}
	sess.MarkReady()
	return true
}

// Outcomes of deliverQueued.
type queuedOutcome int

const (
	queuedDone        queuedOutcome = iota // finished: delivered or skipped
	queuedFailed                           // finished: given up on
	queuedChannelGone                      // still pending; the session ended
	queuedRetry                            // still pending; a database error
)

// deliverQueued sends one queued dispatch and records its outcome.
func (s *Server) deliverQueued(ctx context.Context, sess *channel.Session, d *store.Dispatch) queuedOutcome {
	switch d.Method {
	case wire.MethodProjectCleanup:
		return s.deliverQueuedCleanup(ctx, sess, d)
	case wire.MethodJobCancel:
		return s.deliverQueuedJobCancel(ctx, sess, d)
	}
	log := s.log.With("broker_id", d.BrokerID, "agent_id", d.AgentID, "dispatch", d.ID, "method", d.Method)
	a, err := s.store.GetAgent(ctx, d.AgentID)
	switch {
	case isNotFound(err):
		log.Warn("queued dispatch skipped: its agent was deleted before the runtime broker reconnected")
		return s.finishQueued(ctx, d, store.DispatchSkipped, "agent deleted before delivery", queuedDone)
	case err != nil:
		log.Error("queued dispatch: reading its agent", "err", err)
		return queuedRetry
	}
	if out, refused := s.refuseQueued(ctx, d, a, log); refused {
		return out
	}
	if queuedReassigned(d, a) {
		log.Warn("queued dispatch skipped: its agent moved to another runtime broker or run before delivery",
			"agent_broker_id", a.BrokerID, "agent_run_id", a.RunID, "queued_run_id", d.RunID)
		return s.finishQueued(ctx, d, store.DispatchSkipped, "agent reassigned before delivery", queuedDone)
	}
	s.inflight.add(a.ID)
	defer s.inflight.done(a.ID)
	for {
		var st wire.AgentStatus
		err := s.sendQueued(ctx, sess, d, &st)
		if out, again := s.afterQueuedSend(ctx, sess, d, a, st, err, log); !again {
			return out
		}
	}
}

// queuedReassigned reports whether agent a is no longer the one the
// queued dispatch d was for: it moved to another broker or run.
func queuedReassigned(d *store.Dispatch, a *store.Agent) bool {
	return a.BrokerID != d.BrokerID || (d.RunID != "" && a.RunID != d.RunID)
}

// queuedAnswer is what one delivery's answer says.
type queuedAnswer int

const (
	queuedAnswered   queuedAnswer = iota // the broker carried it out: its status is recorded
	queuedGone                           // nothing to stop: the container is gone
	queuedUnanswered                     // no answer: the broker may or may not have acted
	queuedRefused                        // the broker could not carry it out
)

// readQueuedAnswer reads the answer err to one delivery.
func readQueuedAnswer(err error) queuedAnswer {
	switch {
	case err == nil:
		return queuedAnswered
	case api.IsCode(err, api.CodeAgentNotFound):
		return queuedGone
	case api.IsCode(err, api.CodeBrokerUnavailable), api.IsCode(err, api.CodeBrokerTimeout):
		return queuedUnanswered
	}
	return queuedRefused
}

// afterQueuedSend records one delivery's answer (st, err) for agent a;
// again: send it again (same key) on this session.
func (s *Server) afterQueuedSend(ctx context.Context, sess *channel.Session, d *store.Dispatch, a *store.Agent, st wire.AgentStatus, err error, log *slog.Logger) (_ queuedOutcome, again bool) {
	switch readQueuedAnswer(err) {
	case queuedAnswered:
		if _, err := s.afterDispatch(ctx, a.ID, st, nil, false); err != nil && !api.IsCode(err, api.CodeAgentNotFound) {
			// Stays pending; the resend is answered from the broker's
			// record.
			log.Error("queued dispatch: recording its result", "err", err)
			return queuedRetry, false
		}
		log.Info("queued dispatch delivered", "state", st.State)
		return s.finishQueued(ctx, d, store.DispatchDelivered, st.State, queuedDone), false
	case queuedGone:
		s.queuedContainerGone(ctx, d)
		log.Info("queued dispatch delivered: the container was already gone")
		return s.finishQueued(ctx, d, store.DispatchDelivered, api.ContainerMissing, queuedDone), false
	case queuedUnanswered:
		// Sent again with the same key, here or on the next session.
		n, nerr := s.store.NoteDispatchAttempt(ctx, d.ID, api.AsError(err).Error())
		switch {
		case nerr != nil:
			log.Error("queued dispatch: counting an attempt", "err", nerr)
			return queuedRetry, false
		case n >= maxQueuedAttempts:
			log.Error("queued dispatch failed: no answer after repeated attempts", "attempts", n, "err", err)
			s.markQueuedFailed(ctx, d, err)
			return s.finishQueued(ctx, d, store.DispatchFailed, api.AsError(err).Error(), queuedFailed), false
		case sess.Done() || ctx.Err() != nil:
			log.Info("queued dispatch left pending: the channel ended", "attempts", n, "err", err)
			return queuedChannelGone, false
		}
		log.Warn("queued dispatch: no answer; sending it again", "attempts", n, "err", err)
		return 0, true
	}
	log.Warn("queued dispatch failed on the runtime broker", "err", err)
	s.markQueuedFailed(ctx, d, err)
	return s.finishQueued(ctx, d, store.DispatchFailed, api.AsError(err).Error(), queuedFailed), false
}

// sendQueued sends a queued dispatch once, with its row's key, within the
// dispatch timeout, and counts it in the dispatch metric as "(queued)".
func (s *Server) sendQueued(ctx context.Context, sess *channel.Session, d *store.Dispatch, resp any) error {
	cctx, cancel := context.WithTimeout(ctx, s.opts.DispatchTimeout)
	defer cancel()
	start := time.Now()
	err := sess.Conn.Call(cctx, d.Method, json.RawMessage(d.Body), resp, wire.WithKey(d.Key))
	outcome := "ok"
	if err != nil {
		outcome = api.AsError(err).Code
	}
	s.metrics.dispatch.WithLabelValues(d.Method+"(queued)", outcome).Observe(time.Since(start).Seconds())
	return err
}

// refuseQueued runs plan.Reach for a pinned agent's queued dispatch
// before it is delivered (refused: it is not). A refused one is finished
// as skipped with the refusal as its result, and the agent is left as
// its queue left it: stopped with container status stop_queued, keeping
// its capacity slot until an inventory shows its container gone or its
// placement is repaired (plan.SlotChange, plan.Reconcile). Nothing is sent to
// any broker.
func (s *Server) refuseQueued(ctx context.Context, d *store.Dispatch, a *store.Agent, log *slog.Logger) (queuedOutcome, bool) {
	if a.Pin == nil {
		return queuedDone, false
	}
	in, err := s.loadReach(ctx, a)
	if err != nil {
		log.Error("queued dispatch: reading its agent's placement", "err", err)
		return queuedRetry, true
	}
	e := api.AsError(plan.Reach(in))
	if e == nil {
		return queuedDone, false
	}
	log.Error("queued dispatch not delivered: its agent's placement is inconsistent; the agent stays stop_queued and keeps its capacity slot",
		"agent", a.Slug, "pinned_broker_id", a.Pin.BrokerID, "agent_broker_id", a.BrokerID, "code", e.Code, "reason", e.Message)
	_, err = s.mutateAgent(ctx, a.ID, func(a *store.Agent) error {
		if a.ContainerStatus == api.ContainerStopQueued {
			a.StatusMessage = truncate("queued stop not delivered: "+e.Message, 1000)
		}
		return nil
	})
	if err != nil && !api.IsCode(err, api.CodeAgentNotFound) {
		log.Error("queued dispatch: recording its refusal", "err", err)
		return queuedRetry, true
	}
	return s.finishQueued(ctx, d, store.DispatchSkipped, e.Code+": "+e.Message, queuedDone), true
}

// finishQueued records a dispatch's final status and returns outcome.
// Losing the race to another Hub that finished it is fine; on a database
// error the dispatch stays pending and is sent again, harmlessly (same
// key), after a pause.
func (s *Server) finishQueued(ctx context.Context, d *store.Dispatch, status, result string, outcome queuedOutcome) queuedOutcome {
	err := s.store.FinishDispatch(ctx, d.ID, status, result)
	if err != nil && !isConflict(err) {
		s.log.Error("queued dispatch: recording its outcome", "dispatch", d.ID, "status", status, "err", err)
		return queuedRetry
	}
	return outcome
}

// queuedContainerGone records that the agent of a queued stop has no
// container on its broker: it is stopped and its slot is free.
func (s *Server) queuedContainerGone(ctx context.Context, d *store.Dispatch) {
	st := wire.AgentStatus{AgentID: d.AgentID, RunID: d.RunID, State: api.ContainerMissing}
	if _, err := s.applyStatus(ctx, d.BrokerID, st); err != nil {
		s.log.Error("queued dispatch: recording a missing container", "agent_id", d.AgentID, "err", err)
	}
}

// markQueuedFailed clears the stop_queued mark of a stop the broker could not
// carry out and says why. The slot stays as it is until the inventory
// drainQueue asks for afterwards shows the container's state.
func (s *Server) markQueuedFailed(ctx context.Context, d *store.Dispatch, cause error) {
	_, err := s.mutateAgent(ctx, d.AgentID, func(a *store.Agent) error {
		if a.ContainerStatus == lifecycle.QueuedStop.Container {
			a.Phase, a.ContainerStatus = lifecycle.QueuedStopFailed.Phase, lifecycle.QueuedStopFailed.Container
			a.StatusMessage = "queued stop failed: " + strings.TrimSpace(httpapi.ScrubAddresses(api.AsError(cause).Message))
		}
		return nil
	})
	if err != nil && !api.IsCode(err, api.CodeAgentNotFound) {
		s.log.Error("queued dispatch: recording its failure", "agent_id", d.AgentID, "err", err)
	}
}

// refreshInventory asks the broker for its containers and reconciles.
func (s *Server) refreshInventory(ctx context.Context, sess *channel.Session) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.DispatchTimeout)
	defer cancel()
	var inv wire.Inventory
	err := sess.Conn.Call(ctx, wire.MethodInventory, nil, &inv)
	if err == nil {
		err = s.reconcileInventory(ctx, sess.BrokerID, inv.Agents)
	}
	if err != nil {
		s.log.Warn("reconciling after a failed queued dispatch", "broker_id", sess.BrokerID, "err", err)
	}
}
