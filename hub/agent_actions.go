package hub

import (
	"context"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// handleAgentAction is POST /agents/{agent}/{action}: load, plan.Action,
// load again once the broker's queue is delivered, plan.ActionRun, the
// writes, the command, and what its outcome says (hub/plan/plan_action.go).
func (s *Server) handleAgentAction(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	verb := r.PathValue("action")
	if _, err := plan.ActionFor(verb); err != nil {
		return 0, nil, err
	}
	in, err := s.loadAction(ctx, c, r, verb)
	if err != nil {
		return 0, nil, err
	}
	if err := s.refuseWhileMoving(in.Agent); err != nil {
		return 0, nil, err
	}
	ap, err := plan.Action(in)
	if err != nil {
		return 0, nil, s.answer(c, err)
	}
	a, b := in.Agent, in.Broker
	if ap.QueueIfOffline {
		// Queued when the broker is offline, decided under its queue lock
		// (dispatch_queue.go).
		queued, view, err := s.queueStop(ctx, c, a, b, ap.ClientKey)
		if err != nil {
			return 0, nil, err
		}
		if queued {
			return http.StatusAccepted, view, nil
		}
	}
	if !s.disp.Online(b.ID) {
		return 0, nil, ap.Offline
	}
	// A broker that just came back first receives what was queued for it;
	// decide (reserve, mark stopping) on the agent as that left it.
	rin, again, err := s.loadActionRun(ctx, c, ap, a.ID, b)
	if err != nil {
		return 0, nil, err
	}
	run, err := plan.ActionRun(rin)
	if err != nil {
		return 0, nil, err
	}
	if a, err = s.commitAction(ctx, ap, run, rin.Agent); err != nil {
		return 0, nil, err
	}
	if run.Recreate {
		got, done, err := s.recreate(ctx, a, b, run.Key, again)
		if done {
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, s.agentView(ctx, got, map[string]string{b.ID: b.Name}), nil
		}
		a = got
	}
	return s.runAction(ctx, c, ap, run, a, b)
}

// loadAction reads what plan.Action decides on: the agent (which c may
// act on) and its broker.
func (s *Server) loadAction(ctx context.Context, c *Caller, r *http.Request, verb string) (plan.ActionInput, error) {
	a, err := s.loadAgent(ctx, c, r, authz.AgentLifecycle)
	if err != nil {
		return plan.ActionInput{}, err
	}
	in := plan.ActionInput{Verb: verb, Caller: *c, Agent: a, KeyHeader: r.Header.Get(api.HeaderIdempotencyKey), FreshKey: httpapi.NewID()}
	if (a.BrokerID == "" && a.Pin == nil) || api.CheckIdempotencyKey(in.KeyHeader) != nil {
		return in, nil // refused before a broker is needed
	}
	// The broker's record (its runtime target too) and, for a pin naming
	// another broker, whether that one is registered: plan.Reach's input.
	reach, err := s.loadReach(ctx, a)
	if err != nil {
		return in, err
	}
	in.Broker, in.BrokerMissing, in.PinnedMissing = reach.Broker, reach.BrokerMissing, reach.PinnedMissing
	return in, nil
}

// loadActionRun reads what plan.ActionRun decides on, once the broker's
// session is ready: the agent again, the broker's limit for an action that
// runs it, and for an agent the broker holds nothing of, whether c may
// create it again (again: what that needs).
func (s *Server) loadActionRun(ctx context.Context, c *Caller, ap plan.ActionPlan, agentID string, b *store.Broker) (plan.RunInput, *recreation, error) {
	if _, err := s.disp.Live(ctx, b.ID); err != nil {
		return plan.RunInput{}, nil, err
	}
	a, err := s.store.GetAgent(ctx, agentID)
	if err != nil {
		return plan.RunInput{}, nil, storeerr.Map(err, api.CodeAgentNotFound, "agent")
	}
	in := plan.RunInput{Plan: ap, Agent: a, Broker: b}
	var again *recreation
	if plan.NeedsRecreate(ap.Action, a) {
		// Its secrets are handed over again: decided before a slot is
		// taken.
		if again, in.RecreateErr = s.prepareRecreate(ctx, c, a); in.RecreateErr != nil {
			return in, nil, nil
		}
	}
	if ap.Action.Running {
		if in.Limit, err = s.brokerLimit(ctx, b); err != nil {
			return plan.RunInput{}, nil, err
		}
	}
	return in, again, nil
}

// commitAction makes the action's writes, after every check, in one
// transaction: the agent record the plan wants (plan.ActionRecord) with the
// slot it runs in (store.UpdateAgentWith), or only the slot when the
// record stays as it is. A concurrent change of the agent is met as
// mutateAgentFrom meets it: read again, decide again, write again. It
// returns the agent as written.
func (s *Server) commitAction(ctx context.Context, ap plan.ActionPlan, run plan.RunPlan, a *store.Agent) (*store.Agent, error) {
	var limit *int
	if run.Reserve {
		limit = &run.Limit
	}
	for range 20 {
		next, changed := plan.ActionRecord(ap, run, a)
		if !changed {
			if run.Reserve {
				if err := s.store.Reserve(ctx, a.BrokerID, a.ID, run.Limit); err != nil {
					if isNotFound(err) {
						return nil, s.slotNotFound(ctx, a)
					}
					return nil, run.ReserveErr(a, err)
				}
			}
			return a, nil
		}
		next.UpdatedAt = time.Now().UTC()
		err := s.store.UpdateAgentWith(ctx, next, store.UpdateAgentOptions{ReserveLimit: limit})
		if err == nil {
			return next, nil
		}
		if !isConflict(err) && !isNotFound(err) {
			return nil, run.ReserveErr(a, err)
		}
		// Stale or gone; or, for a not-found with a slot, the broker gone,
		// which the read tells apart from the agent.
		cur, gerr := s.store.GetAgent(ctx, a.ID)
		if gerr != nil {
			return nil, storeerr.Map(gerr, api.CodeAgentNotFound, "agent")
		}
		if isNotFound(err) && run.Reserve {
			return nil, plan.Reach(plan.ReachInput{Agent: cur, BrokerMissing: true})
		}
		if !isConflict(err) {
			return nil, run.ReserveErr(a, err)
		}
		a = cur
	}
	return nil, api.Conflict(api.CodeConflict, "agent is being changed concurrently; try again")
}

// slotNotFound is the answer to a slot the store could not take for
// agent a because the agent or its broker is gone: the broker was
// deregistered (with force) after the action's checks, which plan.Reach
// answers as it does for one already gone.
func (s *Server) slotNotFound(ctx context.Context, a *store.Agent) error {
	cur, err := s.store.GetAgent(ctx, a.ID)
	if err != nil {
		return storeerr.Map(err, api.CodeAgentNotFound, "agent")
	}
	return plan.Reach(plan.ReachInput{Agent: cur, BrokerMissing: true})
}

// runAction sends the action's command and records and answers what its
// outcome says (plan.Outcome).
func (s *Server) runAction(ctx context.Context, c *Caller, ap plan.ActionPlan, run plan.RunPlan, a *store.Agent, b *store.Broker) (int, any, error) {
	var st wire.AgentStatus
	s.inflight.add(a.ID)
	ref := wire.AgentRef{AgentID: a.ID, RunID: a.RunID, Pin: a.Pin}
	if run.MintToken { // the agent runs again, with a fresh token
		ref.AgentToken = s.id.MintAgentToken(a)
	}
	derr := s.disp.Dispatch(ctx, b.ID, run.Method, ref, &st, run.Key)
	out := plan.Outcome(ap.Action, derr)
	defer func() {
		if s.inflight.done(a.ID) && out.Unknown {
			s.settleLater(a.ID, b.ID) // its reconnect's inventory passed the agent by
		}
	}()
	wctx := context.WithoutCancel(ctx)
	if out.Failed {
		// A failed stop or suspend leaves the agent as it was.
		if run.Method == wire.MethodAgentStop {
			_, _ = s.setPhaseIf(wctx, a.ID, api.PhaseStopping, api.PhaseRunning)
		}
		if !out.Requeue {
			return 0, nil, derr
		}
		queued, view, qerr := s.queueStop(wctx, c, a, b, run.Key)
		if qerr == nil && queued {
			return http.StatusAccepted, view, nil
		}
		if qerr != nil || !plan.WentOffline(derr) {
			return 0, nil, derr
		}
		// Not queued because the broker is back already: send it on the
		// new session under the same key, as its queue would have
		// (answered from the broker's record if it had acted).
		if derr = s.resendStop(ctx, a, b, run.Key, &st); derr != nil {
			out.Unknown = plan.WentOffline(derr)
			return 0, nil, derr
		}
		out.Unknown = false
	} else if out.Unknown {
		return 0, nil, derr
	}
	a, err := s.afterDispatch(wctx, a.ID, st, derr, ap.Action.Running)
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

// handleDeleteAgent is DELETE /agents/{agent}: load, plan.Delete, the
// broker's delete, the record.
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
	if !force {
		// A move would go on with an agent that is gone, and leave
		// what it made on the target; --force deletes the record anyway.
		if err := s.refuseWhileMoving(a); err != nil {
			return 0, nil, err
		}
	}
	in := plan.DeleteInput{Caller: *c, Agent: a, Force: force, Online: a.BrokerID != "" && s.disp.Online(a.BrokerID)}
	if a.Pin != nil {
		// A pinned agent's placement is checked online or not, with or
		// without force (plan.Reach); a failed read refuses the delete.
		reach, err := s.loadReach(ctx, a)
		if err != nil {
			return 0, nil, err
		}
		in.Broker, in.BrokerMissing, in.PinnedMissing = reach.Broker, reach.BrokerMissing, reach.PinnedMissing
	} else if a.BrokerID != "" && !in.Online {
		// Read only for a broker with no session; a failed read leaves it
		// offline, not missing.
		_, gerr := s.store.GetBroker(ctx, a.BrokerID)
		in.BrokerMissing = isNotFound(gerr)
	}
	ap, err := plan.Delete(in)
	if err != nil {
		return 0, nil, err
	}
	if ap.Forced {
		s.log.Warn("agent record deleted with force without reaching its runtime broker, which is no longer registered: its workload may still run on that machine",
			"agent", a.Slug, "agent_id", a.ID, "project_id", a.ProjectID, "broker_id", a.BrokerID, "by", c.Principal())
	}
	if ap.Dispatch {
		err := s.disp.Dispatch(ctx, a.BrokerID, wire.MethodAgentDelete, wire.AgentRef{AgentID: a.ID, RunID: a.RunID, Pin: a.Pin}, nil, ap.Key)
		if err != nil && !api.IsCode(err, api.CodeAgentNotFound) {
			return 0, nil, err
		}
	}
	if err := s.store.DeleteAgent(context.WithoutCancel(ctx), a.ID); err != nil && !isNotFound(err) {
		return 0, nil, err
	}
	s.observed.forget(a.ID)
	s.jobs.CancelJobsOf(a.ID)
	return http.StatusNoContent, nil, nil
}

// resendStop sends a stop again, marking the agent stopping first as the
// first attempt did; a failure leaves it running, as it was.
func (s *Server) resendStop(ctx context.Context, a *store.Agent, b *store.Broker, key string, st *wire.AgentStatus) error {
	ref := wire.AgentRef{AgentID: a.ID, RunID: a.RunID, Pin: a.Pin}
	// The broker's new session may serve another target: a pinned
	// agent's placement is checked again first.
	if err := s.checkResend(ctx, ref); err != nil {
		return err
	}
	if _, err := s.setPhaseIf(ctx, a.ID, api.PhaseRunning, api.PhaseStopping); err != nil {
		return err
	}
	err := s.disp.Dispatch(ctx, b.ID, wire.MethodAgentStop, ref, st, key)
	if err != nil {
		_, _ = s.setPhaseIf(context.WithoutCancel(ctx), a.ID, api.PhaseStopping, api.PhaseRunning)
	}
	return err
}

// refuseWhileMoving refuses a lifecycle action of an agent a move is
// running for: the move stops, assigns and starts it itself, and checks
// at each step that nothing else did (it would give way, failing).
func (s *Server) refuseWhileMoving(a *store.Agent) error {
	ms, err := s.store.ListMoves(s.systemCtx(), a.ID)
	if err != nil {
		return err
	}
	if len(ms) > 0 && ms[0].Outcome == "" {
		return api.Conflict(api.CodeConflict, "agent %s is being moved to another runtime broker; wait for the move to end", api.Quote(a.Slug)).
			WithDetail("move", ms[0].ID)
	}
	return nil
}
