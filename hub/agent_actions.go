package hub

import (
	"cmp"
	"context"
	"errors"
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// action describes one lifecycle verb: the broker method it dispatches and
// whether the agent runs afterwards (and so must hold a capacity slot).
type action struct {
	method  string
	running bool
}

var actions = map[string]action{
	"start":   {wire.MethodAgentStart, true},
	"restart": {wire.MethodAgentRestart, true},
	"resume":  {wire.MethodAgentResume, true},
	"stop":    {wire.MethodAgentStop, false},
	"suspend": {wire.MethodAgentSuspend, false},
}

func (s *Server) handleAgentAction(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	act, ok := actions[r.PathValue("action")]
	if !ok {
		return 0, nil, api.NotFound(api.CodeNotFound, "unknown agent action %q: use start, stop, restart, suspend or resume", r.PathValue("action"))
	}
	a, err := s.loadAgent(ctx, c, r, authz.AgentLifecycle)
	if err != nil {
		return 0, nil, err
	}
	if len(r.Header.Get(api.HeaderIdempotencyKey)) > maxIdempotencyKey {
		// Bounded: it is kept with a queued stop and on the broker.
		return 0, nil, api.BadRequest("%s is longer than %d bytes", api.HeaderIdempotencyKey, maxIdempotencyKey)
	}
	if a.BrokerID == "" {
		return 0, nil, api.Conflict(api.CodeConflict, "agent %q has no runtime broker", a.Slug)
	}
	if act.running {
		if err := s.checkRerun(ctx, c, a); err != nil {
			return 0, nil, err
		}
	}
	b, err := s.store.GetBroker(ctx, a.BrokerID)
	if isNotFound(err) {
		err = brokerMissing(a)
	}
	if err != nil {
		return 0, nil, err
	}
	if act.running {
		// Placing it again: the broker must still allow its passthrough
		// identity (the broker may have stopped offering it).
		if err := s.refusal(c, authz.BrokerDispatch, authz.PassthroughAllowed(a.Passthrough, b.Capabilities), nil); err != nil {
			return 0, nil, err
		}
	}
	// The dispatch key: the caller's Idempotency-Key (scoped to the caller,
	// the action and the agent) when given, so a retried request is
	// carried out once. The broker answers a key it has seen from its
	// record: without the agent in it, the same key on another agent
	// would get the first agent's state recorded as its own.
	clientKey := ""
	if k := r.Header.Get(api.HeaderIdempotencyKey); k != "" {
		clientKey = r.PathValue("action") + ":" + a.ID + ":" + c.Principal() + ":" + k
	}
	key := cmp.Or(clientKey, r.PathValue("action")+":"+mustV7())
	if act.method == wire.MethodAgentStop {
		// The one action the spec queues for an offline broker: 202, and
		// delivered when the broker reconnects (dispatch_queue.go).
		queued, view, err := s.queueStop(ctx, c, a, b, clientKey)
		if err != nil {
			return 0, nil, err
		}
		if queued {
			return http.StatusAccepted, view, nil
		}
	}
	if !s.brokerOnline(b.ID) {
		return 0, nil, api.Errorf(http.StatusServiceUnavailable, api.CodeBrokerOffline,
			"runtime broker %q is offline; try again when it reconnects", b.Name).WithDetail("broker", b.Name)
	}
	// A broker that just came back first receives what was queued for it;
	// decide (reserve, mark stopping) on the agent as that left it.
	if _, err := s.liveSession(ctx, b.ID); err != nil {
		return 0, nil, err
	}
	if a, err = s.store.GetAgent(ctx, a.ID); err != nil {
		return 0, nil, storeErr(err, api.CodeAgentNotFound, "agent")
	}
	var again *recreation
	if act.running && noContainer(a) {
		// Its create was refused or never reached the broker: starting it
		// is creating it, if c may hand over its secrets (decided before
		// a slot is taken). A restart or a resume does the same: there is
		// no container to restart or resume, and what the caller asks for
		// is the agent running (the broker would answer agent_not_found).
		if again, err = s.prepareRecreate(ctx, c, a); err != nil {
			return 0, nil, err
		}
	}
	if act.running {
		// Checked again at start, resume and restart. A refused restart
		// leaves the running container alone: nothing is dispatched.
		limit, err := s.brokerLimit(ctx, b)
		if err == nil {
			if err = s.store.Reserve(ctx, b.ID, a.ID, limit); errors.Is(err, store.ErrQuota) {
				err = quotaError(b, limit)
			}
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if act.method == wire.MethodAgentStop && a.Phase == api.PhaseRunning {
		// Recorded first, so the exit the stop causes is not taken for a
		// crash when the broker reports it.
		if _, err := s.setPhaseIf(ctx, a.ID, api.PhaseRunning, api.PhaseStopping); err != nil {
			return 0, nil, err
		}
	}
	if again != nil {
		got, done, err := s.recreate(ctx, a, b, key, again)
		if done {
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, s.agentView(ctx, got, map[string]string{b.ID: b.Name}), nil
		}
		a = got
	}
	var st wire.AgentStatus
	s.inflight.add(a.ID)
	ref := wire.AgentRef{AgentID: a.ID, RunID: a.RunID}
	if act.running { // start, restart, resume: the agent runs again, with a fresh token
		ref.AgentToken = s.mintAgentToken(a)
	}
	derr := s.dispatch(ctx, b.ID, act.method, ref, &st, key)
	offline := wentOffline(derr)
	defer func() {
		if s.inflight.done(a.ID) && offline {
			s.settleLater(a.ID, b.ID) // its reconnect's inventory passed the agent by
		}
	}()
	if derr != nil && !act.running {
		// A failed stop or suspend leaves the agent as it was.
		if act.method == wire.MethodAgentStop {
			_, _ = s.setPhaseIf(context.WithoutCancel(ctx), a.ID, api.PhaseStopping, api.PhaseRunning)
			if lostReply(derr) || api.IsCode(derr, api.CodeBrokerOffline) {
				// The broker went away with the stop unanswered and did
				// not come back in time: queue it under the same key, so
				// that it is delivered, and carried out once, when the
				// broker is back.
				queued, view, qerr := s.queueStop(context.WithoutCancel(ctx), c, a, b, key)
				if qerr == nil && queued {
					return http.StatusAccepted, view, nil
				}
				if qerr == nil && wentOffline(derr) {
					// Not queued because the broker is back already: send
					// it on the new session under the same key, as its
					// queue would have (answered from the broker's record
					// if it had acted).
					derr = s.resendStop(ctx, a, b, key, &st)
					offline = wentOffline(derr)
				}
			}
		}
		if derr != nil {
			return 0, nil, derr
		}
	}
	if offline {
		// Whether the broker acted is unknown until it is back: the record
		// stays as the command found it (with the slot just taken), and
		// the broker's inventory at its reconnect settles phase and slot.
		return 0, nil, derr
	}
	a, err = s.afterDispatch(context.WithoutCancel(ctx), a.ID, st, derr, act.running)
	if err == nil {
		err = derr
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.agentView(ctx, a, map[string]string{b.ID: b.Name}), nil
}

// setPhaseIf moves an agent from one phase to another, leaving it alone
// if it is in any other phase.
func (s *Server) setPhaseIf(ctx context.Context, id, from, to string) (*store.Agent, error) {
	return s.mutateAgent(ctx, id, func(a *store.Agent) error {
		if a.Phase == from {
			a.Phase = to
		}
		return nil
	})
}

func (s *Server) handleDeleteAgent(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	a, err := s.loadAgent(ctx, c, r, authz.AgentLifecycle)
	if err != nil {
		return 0, nil, err
	}
	force, err := forceParam(r)
	if err != nil {
		return 0, nil, err
	}
	if a.BrokerID != "" && !s.brokerOnline(a.BrokerID) {
		// Removing the record without reaching the broker could leave a
		// workload running with its capacity released: only for a broker
		// that is gone for good, and only when forced.
		err := s.orBrokerMissing(ctx, a, api.Errorf(http.StatusServiceUnavailable, api.CodeBrokerOffline,
			"the agent's runtime broker is offline; delete it when the broker reconnects"))
		if !force || !api.IsCode(err, api.CodeBrokerMissing) {
			return 0, nil, err
		}
		s.log.Warn("agent record deleted with force without reaching its runtime broker, which is no longer registered: its workload may still run on that machine",
			"agent", a.Slug, "agent_id", a.ID, "project_id", a.ProjectID, "broker_id", a.BrokerID, "by", c.Principal())
	} else if a.BrokerID != "" {
		err := s.dispatch(ctx, a.BrokerID, wire.MethodAgentDelete, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, nil, "delete:"+a.ID)
		if err != nil && !api.IsCode(err, api.CodeAgentNotFound) {
			return 0, nil, err
		}
	}
	if err := s.store.DeleteAgent(context.WithoutCancel(ctx), a.ID); err != nil && !isNotFound(err) {
		return 0, nil, err
	}
	s.observed.forget(a.ID)
	return http.StatusNoContent, nil, nil
}

// resendStop sends a stop again, marking the agent stopping first as the
// first attempt did; a failure leaves it running, as it was.
func (s *Server) resendStop(ctx context.Context, a *store.Agent, b *store.Broker, key string, st *wire.AgentStatus) error {
	if _, err := s.setPhaseIf(ctx, a.ID, api.PhaseRunning, api.PhaseStopping); err != nil {
		return err
	}
	err := s.dispatch(ctx, b.ID, wire.MethodAgentStop, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, st, key)
	if err != nil {
		_, _ = s.setPhaseIf(context.WithoutCancel(ctx), a.ID, api.PhaseStopping, api.PhaseRunning)
	}
	return err
}
