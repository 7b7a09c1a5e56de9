// Recording agent state: lifecycle outcomes and optimistic updates.

package hub

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// afterDispatch records the outcome of a lifecycle command. On failure the
// agent goes to the error phase with a message naming the cause and its
// capacity slot is released (nothing half-done stays accounted).
func (s *Server) afterDispatch(ctx context.Context, agentID string, st wire.AgentStatus, derr error, wantRunning bool) (*store.Agent, error) {
	return s.afterDispatchFrom(ctx, agentID, nil, st, derr, wantRunning)
}

// afterDispatchFrom is afterDispatch for a caller that holds the agent's
// record as it wrote it (cur, which it gives up): see mutateAgentFrom.
func (s *Server) afterDispatchFrom(ctx context.Context, agentID string, cur *store.Agent, st wire.AgentStatus, derr error, wantRunning bool) (*store.Agent, error) {
	unlock := s.observed.lock(agentID)
	defer unlock()
	a, err := s.mutateAgentFrom(ctx, agentID, cur, func(a *store.Agent) error {
		if derr != nil {
			a.Phase = api.PhaseError
			a.StatusMessage = httpapi.ScrubAddresses(api.AsError(derr).Message)
			a.PortMappings = nil // until the broker reports a state that holds ports again
			return nil
		}
		if !s.observed.fresh(a.ID, st.ObservedAt) {
			return errStale // a newer report already told the state
		}
		a.StatusMessage = httpapi.ScrubAddresses(st.Message) // the runtime's words: a registry or daemon address
		a.ContainerStatus = st.State
		a.PortMappings = st.Ports
		a.Phase = lifecycle.PhaseFor(st.State, wantRunning)
		// The broker says where it started the workspace (a move reads
		// it); a command that started nothing says nothing.
		if st.WorkspacePlacement != "" {
			a.WorkspacePlacement = st.WorkspacePlacement
		}
		return nil
	})
	switch {
	case errors.Is(err, errStale):
		a, err = s.store.GetAgent(ctx, agentID)
		if err == nil && derr == nil && (wantRunning && lifecycle.StartedMeanwhile(a.Phase, a.ContainerStatus) ||
			st.WorkspacePlacement != "" && st.WorkspacePlacement != a.WorkspacePlacement) {
			a, err = s.settleStarted(ctx, a, wantRunning, st.WorkspacePlacement)
		}
	case err == nil && derr == nil:
		s.observed.applied(agentID, st.ObservedAt)
		s.log.Debug("command answer applied", "agent_id", agentID, "state", st.State, "observed_at", st.ObservedAt, "phase", a.Phase)
	}
	if err != nil {
		return nil, err
	}
	// A pending container (provisioning) keeps the slot its start took,
	// as it does when a later report says it is pending (HoldsSlot).
	if !lifecycle.HoldsSlot(a.Phase) {
		if err := s.store.Release(ctx, a.ID); err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	return a, nil
}

// settleStarted records what a command's answer still says when a newer
// report of the agent's container was applied first: where the broker
// started the workspace (placement, not ordered in time as states are),
// and, for a start (wantRunning) whose container's report was judged on
// the record the start found (lifecycle.StartedMeanwhile), the phase the
// report calls for: the start is what made it pending.
func (s *Server) settleStarted(ctx context.Context, a *store.Agent, wantRunning bool, placement string) (*store.Agent, error) {
	n, err := s.mutateAgentFrom(ctx, a.ID, a, func(a *store.Agent) error {
		changed := false
		if wantRunning && lifecycle.StartedMeanwhile(a.Phase, a.ContainerStatus) {
			a.Phase, changed = lifecycle.PhaseFor(a.ContainerStatus, true), true
		}
		if placement != "" && a.WorkspacePlacement != placement {
			a.WorkspacePlacement, changed = placement, true
		}
		if !changed {
			return errStale
		}
		return nil
	})
	if errors.Is(err, errStale) {
		return s.store.GetAgent(ctx, a.ID)
	}
	return n, err
}

// errStale aborts a mutation whose status report is older than one
// already applied.
var errStale = errors.New("stale status report")

// mutateAgent applies f to the latest copy of an agent and writes it,
// retrying on a concurrent update.
func (s *Server) mutateAgent(ctx context.Context, id string, f func(*store.Agent) error) (*store.Agent, error) {
	return s.mutateAgentFrom(ctx, id, nil, f)
}

// mutateAgentFrom is mutateAgent starting from cur, the record as the
// caller last wrote it, when it has one: the first attempt then costs no
// read, and the version check of the write makes it safe (a report that
// changed the agent meanwhile makes it a conflict, and the next attempt
// reads the stored record). cur is the caller's to give up: f changes it.
func (s *Server) mutateAgentFrom(ctx context.Context, id string, cur *store.Agent, f func(*store.Agent) error) (*store.Agent, error) {
	for range 20 {
		a := cur
		cur = nil // only the first attempt starts from the caller's copy
		var err error
		if a == nil {
			a, err = s.store.GetAgent(ctx, id)
		}
		if err != nil {
			return nil, storeerr.Map(err, api.CodeAgentNotFound, "agent")
		}
		if err := f(a); err != nil {
			return nil, err
		}
		a.UpdatedAt = time.Now().UTC()
		err = s.store.UpdateAgent(ctx, a)
		if err == nil {
			return a, nil
		}
		if !isConflict(err) { // not found: deleted meanwhile
			return nil, storeerr.Map(err, api.CodeAgentNotFound, "agent")
		}
	}
	return nil, api.Conflict(api.CodeConflict, "agent is being changed concurrently; try again")
}
