// The plan of a broker's inventory reconciliation (see reconcileInventory
// and plan.go).

package plan

import (
	"slices"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// ReconcileInput is what a reconciliation decides on: the containers a
// broker reports, and the Hub's records of the broker's agents and slots.
type ReconcileInput struct {
	BrokerID  string
	Inventory []wire.AgentStatus
	// Agents are the agents assigned to the broker; Reserved the agents
	// holding a slot on it (read first: an agent is committed with its
	// slot, so every slot read has its agent among Agents, unless it has
	// left the broker).
	Agents   []*store.Agent
	Reserved []string
	// InFlight are the agents with a create or lifecycle command on its
	// way in this Hub: left to their command's outcome.
	InFlight map[string]bool
	// Broker is the broker's record (its runtime target); Elsewhere the
	// agents holding a slot on it that are assigned to another broker
	// (or none), for the pinned agents among them.
	Broker    *store.Broker
	Elsewhere map[string]*store.Agent
}

// reconcileStep is one agent's status to apply, and whether it held a
// slot when read.
type reconcileStep struct {
	Agent  *store.Agent
	Status wire.AgentStatus
	Held   bool
}

// reconcilePlan is a reconciliation decided.
type reconcilePlan struct {
	// Apply: the reported state of each agent, or missing for one the
	// broker no longer has; its slot is then set by SlotChange.
	Apply []reconcileStep
	// Skipped: agents in flight.
	Skipped []string
	// Misplaced: pinned agents whose placement is inconsistent
	// (Reach), left as they are with their slot: this broker's
	// inventory cannot speak for a runtime target it does not serve, nor
	// for an agent assigned elsewhere. An agent pinned here but assigned
	// elsewhere loses its slot here only when this broker, serving the
	// pinned target, no longer reports its container.
	Misplaced []string
	// Release: slots of agents no longer on the broker, not in flight.
	Release []string
	// Unknown: containers the Hub has no agent for, flagged in the log,
	// never deleted.
	Unknown []string
}

// Reconcile aligns the records with the inventory: every agent on the
// broker ends up holding a slot exactly when its phase says it runs.
func Reconcile(in ReconcileInput) reconcilePlan {
	reported := make(map[string]wire.AgentStatus, len(in.Inventory))
	for _, st := range in.Inventory {
		reported[st.AgentID] = st
	}
	held := make(map[string]bool, len(in.Reserved))
	for _, id := range in.Reserved {
		held[id] = true
	}
	var p reconcilePlan
	for _, a := range in.Agents {
		st, ok := reported[a.ID]
		delete(reported, a.ID)
		h := held[a.ID]
		delete(held, a.ID)
		if in.InFlight[a.ID] {
			p.Skipped = append(p.Skipped, a.ID)
			continue
		}
		if misplaced(a, in.Broker) {
			p.Misplaced = append(p.Misplaced, a.ID)
			continue
		}
		if !ok {
			st = wire.AgentStatus{AgentID: a.ID, RunID: a.RunID, State: api.ContainerMissing}
		}
		p.Apply = append(p.Apply, reconcileStep{Agent: a, Status: st, Held: h})
	}
	for id := range held {
		if in.InFlight[id] {
			continue
		}
		if o := in.Elsewhere[id]; o != nil && o.Pin != nil && o.Pin.BrokerID == in.BrokerID {
			if _, live := reported[id]; live || !servesPin(in.Broker, o.Pin) {
				delete(reported, id) // its container, known
				p.Misplaced = append(p.Misplaced, id)
				continue
			}
		}
		p.Release = append(p.Release, id)
	}
	for id := range reported {
		p.Unknown = append(p.Unknown, id)
	}
	slices.Sort(p.Release)
	slices.Sort(p.Unknown)
	slices.Sort(p.Misplaced)
	return p
}

// misplaced reports whether a is a pinned agent whose placement on
// broker b (nil: not registered) is inconsistent.
func misplaced(a *store.Agent, b *store.Broker) bool {
	return a.Pin != nil && Reach(ReachInput{Agent: a, Broker: b, BrokerMissing: b == nil}) != nil
}

// servesPin reports whether broker b serves pin's runtime target.
func servesPin(b *store.Broker, pin *api.PinnedRuntimeTarget) bool {
	return b != nil && b.RuntimeTarget != nil && pin.Complete() && *b.RuntimeTarget == pin.RuntimeTarget
}

// SlotChange is what an agent's slot needs once its status is applied
// (got: the agent as recorded, nil if it is gone) for the slot to follow
// its phase. A stop_queued agent keeps the slot it had (none, if it was
// suspended) until its container is seen stopped. A running container
// holds a slot even if the Hub lost track of it: it is taken again with
// no limit (re-adopting never fails on quota).
func SlotChange(got *store.Agent, held bool) (reserve, release bool) {
	if got == nil || got.ContainerStatus == api.ContainerStopQueued {
		return false, false
	}
	holding := lifecycle.HoldsSlot(got.Phase)
	return holding && !held, !holding && held
}
