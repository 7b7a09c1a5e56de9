package hub

import (
	"context"
	"errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// A create cut off by its broker going offline (the broker frozen, its
// host gone) has an unknown outcome: the broker may have made the
// container before it stopped answering. The caller gets 503
// runtime_broker_offline at once (see channelErr); the record stays as the
// create left it, provisioning and holding the slot a start took, so that
// the broker's inventory at its reconnect settles it like any interrupted
// create: the container's state when it exists, phase error ("create was
// interrupted before the runtime broker confirmed it") when it does not.
// A lifecycle command cut off the same way leaves the record as the
// command found it, for the same inventory to settle.

// unsettledMessage is the status an agent shows until then.
const unsettledMessage = "the runtime broker went offline before confirming the create; this is settled when it reconnects"

// awaitCreateOutcome records that the create's outcome is unknown,
// leaving the phase (provisioning) and the slot as they are.
func (s *Server) awaitCreateOutcome(ctx context.Context, cur *store.Agent, derr error) (*store.Agent, error) {
	unlock := s.observed.lock(cur.ID)
	defer unlock()
	return s.mutateAgentFrom(ctx, cur.ID, cur, func(a *store.Agent) error {
		if a.Phase == api.PhaseProvisioning { // not settled already by a report
			a.StatusMessage = unsettledMessage
		}
		return nil
	})
}

// settleLater settles an unknown create on the broker's new session when
// the reconnect's reconciliation skipped the agent (its create was still
// in flight here): it asks the broker about the agent, once the new
// session is current, and applies the answer as an inventory entry would.
// If the broker does not come back within the dispatch timeout, its next
// hello's reconciliation does it.
func (s *Server) settleLater(agentID, brokerID string) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(s.systemCtx(), s.opts.DispatchTimeout)
		defer cancel()
		err := s.settleAgent(ctx, agentID, brokerID)
		var mis misplacedErr
		if errors.As(err, &mis) {
			e := api.AsError(mis.error)
			s.log.Warn("a command cut off by its broker going offline is not settled: its pinned agent's placement is inconsistent, and the agent is left as it is, with its capacity slot",
				"agent_id", agentID, "broker_id", brokerID, "code", e.Code, "reason", e.Message)
			return
		}
		if err != nil {
			s.log.Warn("settling a create cut off by its broker going offline; the next reconnect settles it",
				"agent_id", agentID, "broker_id", brokerID, "err", err)
		}
	}()
}

// misplacedErr is settleAgent's refusal of a pinned agent whose placement
// is inconsistent (plan.Reach's error).
type misplacedErr struct{ error }

func (e misplacedErr) Unwrap() error { return e.error }

func (s *Server) settleAgent(ctx context.Context, agentID, brokerID string) error {
	for { // the session becomes current right after the hello's reconciliation
		cur, changed := s.sessions.Watch(brokerID)
		if cur != nil {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	a, err := s.store.GetAgent(ctx, agentID)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	if a.Pin != nil {
		// Asking a broker the agent's placement does not name (it came
		// back serving another target, or the record was edited) would
		// settle the agent, and its slot, from a runtime that cannot
		// speak for it: refused as any reach is, as the reconnect's
		// inventory leaves it (plan.Reconcile).
		in, err := s.loadReach(ctx, a)
		if err != nil {
			return err
		}
		if err := plan.Reach(in); err != nil {
			return misplacedErr{err}
		}
	}
	var st wire.AgentStatus
	err = s.disp.Dispatch(ctx, brokerID, wire.MethodAgentInspect, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, &st, "")
	switch {
	case api.IsCode(err, api.CodeAgentNotFound):
		st = wire.AgentStatus{AgentID: a.ID, RunID: a.RunID, State: api.ContainerMissing}
	case err != nil:
		return err
	}
	got, err := s.applyStatus(ctx, brokerID, st)
	if err != nil || got == nil || got.ContainerStatus == api.ContainerStopQueued {
		return err
	}
	if lifecycle.HoldsSlot(got.Phase) {
		err = s.store.Reserve(ctx, brokerID, got.ID, 0) // as reconciliation re-adopts
	} else {
		err = s.store.Release(ctx, got.ID)
	}
	if isNotFound(err) {
		err = nil
	}
	return err
}
