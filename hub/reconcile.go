package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// applyAgentStatus records a state change a broker reported (an agent
// exiting, say) and returns the agent as stored. Reports for another
// broker's or an older run's agent, or older than one already applied,
// change nothing. Only a change from a slot-holding phase to another frees
// the slot: a report about an agent that was already stopped must not
// release the slot a start in flight has just taken.
func (s *Server) applyAgentStatus(ctx context.Context, brokerID string, st wire.AgentStatus) error {
	_, err := s.applyStatus(ctx, brokerID, st)
	return err
}

func (s *Server) applyStatus(ctx context.Context, brokerID string, st wire.AgentStatus) (*store.Agent, error) {
	unlock := s.observed.lock(st.AgentID)
	defer unlock()
	a, err := s.store.GetAgent(ctx, st.AgentID)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if a.BrokerID != brokerID || (st.RunID != "" && a.RunID != "" && st.RunID != a.RunID) {
		return a, nil
	}
	var wasHolding bool
	var from string
	a2, err := s.mutateAgent(ctx, a.ID, func(a *store.Agent) error {
		if !s.observed.fresh(a.ID, st.ObservedAt) {
			return errStale
		}
		wasHolding, from = keepsSlot(a), a.Phase
		applyContainerState(a, st)
		return nil
	})
	if errors.Is(err, errStale) {
		s.log.Debug("broker report of an agent older than one applied; dropped", "agent_id", st.AgentID, "state", st.State, "observed_at", st.ObservedAt)
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	s.log.Debug("broker report of an agent applied", "agent_id", st.AgentID, "state", st.State, "observed_at", st.ObservedAt,
		"phase_before", from, "phase", a2.Phase)
	s.observed.applied(a.ID, st.ObservedAt)
	if wasHolding && !keepsSlot(a2) {
		return a2, s.store.Release(ctx, a2.ID)
	}
	return a2, nil
}

// keepsSlot: lifecycle.KeepsSlot of a's record.
func keepsSlot(a *store.Agent) bool { return lifecycle.KeepsSlot(a.Phase, a.ContainerStatus) }

// applyContainerState records the broker's report st of a's container,
// as the lifecycle table says (lifecycle.Observe), with the message it
// calls for.
func applyContainerState(a *store.Agent, st wire.AgentStatus) {
	if a.StatusMessage == unsettledMessage {
		a.StatusMessage = "" // a report settles it: what follows says how
	}
	o := lifecycle.Observe(a.Phase, a.ContainerStatus, st.State, st.ExitCode)
	a.PortMappings = st.Ports // the broker reports them while the container holds them
	if o.StopQueued {
		return // still live: the queued stop decides what happens next
	}
	a.ContainerStatus = st.State
	if o.Phase != "" {
		a.Phase = o.Phase
	}
	switch o.Note {
	case lifecycle.NoteClear:
		a.StatusMessage = ""
	case lifecycle.NoteWaiting:
		a.StatusMessage = truncate(httpapi.ScrubAddresses(st.Message), 500)
	case lifecycle.NoteExitCode:
		a.StatusMessage = fmt.Sprintf("agent exited with code %d", *st.ExitCode)
		if st.Message != "" { // the runtime's account: last output lines, OOM, ...
			a.StatusMessage += ": " + truncate(httpapi.ScrubAddresses(st.Message), 500)
		}
	case lifecycle.NoteGone:
		a.StatusMessage = "container not found on the runtime broker"
	case lifecycle.NoteInterrupted:
		a.StatusMessage = "create was interrupted before the runtime broker confirmed it"
	}
}

// inflight holds the agents with a create or lifecycle command on its way
// to a broker in this Hub process. Reconciliation leaves them to the
// command's own outcome, and notes that it did (skip), so a command whose
// outcome its broker's going offline left unknown can have it settled
// even when the reconnect's inventory passed the agent by. After a Hub
// restart it is empty, which is right: nothing can be in flight from a
// process that no longer exists.
type inflight struct{ m sync.Map } // agent ID -> *atomic.Bool: skipped by a reconciliation

func (f *inflight) add(id string) { f.m.Store(id, new(atomic.Bool)) }

// done ends the agent's flight and reports whether a reconciliation
// skipped the agent meanwhile.
func (f *inflight) done(id string) (skipped bool) {
	v, ok := f.m.LoadAndDelete(id)
	return ok && v.(*atomic.Bool).Load()
}

func (f *inflight) has(id string) bool { _, ok := f.m.Load(id); return ok }

// skip reports whether the agent is in flight, noting that a
// reconciliation left it alone for that.
func (f *inflight) skip(id string) bool {
	v, ok := f.m.Load(id)
	if ok {
		v.(*atomic.Bool).Store(true)
	}
	return ok
}

// reconcileInventory aligns the Hub with the containers a broker reports,
// and is the repair point for capacity after any crash: every agent on the
// broker ends up holding a slot exactly when its phase says it runs.
// Containers the Hub has no record of are flagged in the log, never
// deleted. It loads, plans (plan.Reconcile), then applies each agent's
// status and sets its slot by what was recorded (plan.SlotChange).
func (s *Server) reconcileInventory(ctx context.Context, brokerID string, inv []wire.AgentStatus) error {
	in, err := s.loadReconcile(ctx, brokerID, inv)
	if err != nil {
		return err
	}
	rp := plan.Reconcile(in)
	for _, step := range rp.Apply {
		got, err := s.applyStatus(ctx, brokerID, step.Status)
		if err != nil {
			return err
		}
		switch reserve, release := plan.SlotChange(got, step.Held); {
		case reserve:
			err = s.store.Reserve(ctx, brokerID, got.ID, 0)
		case release:
			err = s.store.ReleaseOn(ctx, brokerID, got.ID)
		}
		if errors.Is(err, store.ErrReservationScope) {
			// Its slot is on another broker (edited records): never
			// moved, and not a reason to refuse this broker's reconnect,
			// which would leave every other agent of it unreachable.
			s.log.Warn("reconciliation leaves an agent's capacity slot on the other runtime broker that holds it: reservations are never moved",
				"broker_id", brokerID, "agent_id", got.ID)
			continue
		}
		if err != nil && !isNotFound(err) {
			return err
		}
	}
	for _, id := range rp.Release {
		// Only the slot on this broker: a move may have taken the agent,
		// and its slot, to another since the plan read it.
		if err := s.store.ReleaseOn(ctx, brokerID, id); err != nil && !isNotFound(err) {
			return err
		}
	}
	for _, id := range rp.Misplaced {
		s.log.Warn("reconciliation leaves a pinned agent whose placement is inconsistent as it is, with its capacity slot", "broker_id", brokerID, "agent_id", id)
	}
	for _, id := range rp.Unknown {
		s.log.Warn("runtime broker reports a container the hub has no agent for; leaving it alone", "broker_id", brokerID, "agent_id", id)
	}
	return nil
}

// loadReconcile reads what plan.Reconcile decides on. Reservations are
// read before agents: an agent is committed together with its
// reservation, so every reservation seen here has its agent in the
// listing below. The agents in flight are noted as skipped by this
// reconciliation (see inflight).
func (s *Server) loadReconcile(ctx context.Context, brokerID string, inv []wire.AgentStatus) (plan.ReconcileInput, error) {
	in := plan.ReconcileInput{BrokerID: brokerID, Inventory: inv, InFlight: map[string]bool{}}
	var err error
	if in.Reserved, err = s.store.ReservedAgents(ctx, brokerID); err != nil {
		return in, err
	}
	page := store.Page{Limit: 1000}
	for {
		agents, next, _, err := s.store.ListAgents(ctx, store.AgentFilter{BrokerID: brokerID}, page)
		if err != nil {
			return in, err
		}
		in.Agents = append(in.Agents, agents...)
		if next == "" {
			break
		}
		page.Cursor = next
	}
	assigned := make(map[string]bool, len(in.Agents))
	for _, a := range in.Agents {
		assigned[a.ID] = true
		if s.inflight.skip(a.ID) {
			in.InFlight[a.ID] = true
		}
	}
	// The broker's runtime target, and the agents holding a slot here
	// that are assigned elsewhere (rare: read one by one), for pinned
	// agents whose placement is inconsistent (plan.Reconcile).
	b, err := s.store.GetBroker(ctx, brokerID)
	if err != nil && !isNotFound(err) {
		return in, err
	}
	in.Broker = b
	in.Elsewhere = map[string]*store.Agent{}
	for _, id := range in.Reserved {
		if assigned[id] {
			continue
		}
		a, err := s.store.GetAgent(ctx, id)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return in, err
		}
		in.Elsewhere[id] = a
	}
	for _, id := range in.Reserved {
		if _, seen := in.InFlight[id]; !seen && s.inflight.has(id) {
			in.InFlight[id] = true
		}
	}
	return in, nil
}
