// The placement check of every operation that reaches a broker for an
// existing agent (multi-broker spec, "Inconsistent agent placement"), as
// a pure function of the records the operation's load read.
//
// A pinned agent (placed on a flat Runtime Broker: store.Agent.Pin) runs
// only on the broker its pin names, serving the target its pin names.
// When its saved placement says otherwise (the records were edited, the
// broker came back serving another target or none, or was deregistered),
// nothing is sent to any broker, and no other broker is looked for: a
// wrong broker could start a second workload, or tear down one that is
// not the agent's. No per-agent repair exists in this release
// (ptone/scion#4844), so the messages say what is wrong and what an
// operator can do.

package plan

import (
	"fmt"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// ReachInput is what Reach knows about the placement of an agent an
// operation is about to reach its broker for.
type ReachInput struct {
	Agent *store.Agent
	// Broker is the record of the broker the agent is assigned to
	// (Agent.BrokerID); nil when it has none or when BrokerMissing.
	Broker *store.Broker
	// BrokerMissing: the agent's broker is no longer registered.
	BrokerMissing bool
	// PinnedMissing: the broker the agent's pin names is no longer
	// registered (the same as BrokerMissing when the pin names the
	// assigned broker).
	PinnedMissing bool
}

// Reach is the check every operation that reaches a broker for an
// existing agent runs before anything is sent: nothing is sent, and no
// other broker is looked for, when the agent's saved placement cannot be
// reached. For an agent without a pin its rules are, in order:
//
//  1. it has no broker: 409 conflict;
//  2. its broker is no longer registered: 409 runtime_broker_missing.
//
// For a pinned agent, in order (the spec's conditions; a pin that cannot
// be read is reported before what it names, and the broker it names
// before the assignment):
//
//  1. the pin is incomplete: 409 runtime_target_pin_stale;
//  2. the pinned broker is no longer registered: 409
//     runtime_broker_missing;
//  3. the agent has no broker: 409 runtime_target_pin_stale;
//  4. the pin names another broker than the assigned one: 409
//     runtime_target_pin_stale;
//  5. the assigned broker no longer serves a single runtime target: 409
//     runtime_target_mismatch;
//  6. it serves another target than the pinned one: 409
//     runtime_target_mismatch.
func Reach(in ReachInput) error {
	a := in.Agent
	pin := a.Pin
	if pin == nil {
		if a.BrokerID == "" {
			return api.Conflict(api.CodeConflict, "agent %q has no runtime broker", a.Slug)
		}
		if in.BrokerMissing {
			return BrokerMissing(a)
		}
		return nil
	}
	switch {
	case !pin.Complete():
		return placementErr(api.CodeTargetPinStale, a,
			fmt.Sprintf("agent %q's runtime target pin is incomplete (broker %s, target %s), so the Hub cannot tell which runtime it runs on",
				a.Slug, api.Quote(pin.BrokerID), api.Quote(pin.RuntimeTarget.String())))
	case in.PinnedMissing || (pin.BrokerID == a.BrokerID && in.BrokerMissing):
		return placementErr(api.CodeBrokerMissing, a,
			fmt.Sprintf("agent %q is pinned to runtime broker %s, which is no longer registered, so nothing can reach it; its workload may still run on that machine",
				a.Slug, pin.BrokerID))
	case a.BrokerID == "":
		return placementErr(api.CodeTargetPinStale, a,
			fmt.Sprintf("agent %q is pinned to runtime broker %s but is assigned to no runtime broker", a.Slug, pin.BrokerID))
	case pin.BrokerID != a.BrokerID:
		return placementErr(api.CodeTargetPinStale, a,
			fmt.Sprintf("agent %q is pinned to runtime broker %s but is assigned to runtime broker %s", a.Slug, pin.BrokerID, a.BrokerID))
	case in.Broker == nil:
		// Not reached from a load (the pinned broker is the assigned
		// one, reported above when gone); a placement that was not read
		// is refused rather than trusted.
		return placementErr(api.CodeBrokerMissing, a,
			fmt.Sprintf("agent %q's runtime broker %s could not be found", a.Slug, a.BrokerID))
	case in.Broker.RuntimeTarget == nil:
		return placementErr(api.CodeTargetMismatch, a,
			fmt.Sprintf("agent %q is pinned to runtime target %s on runtime broker %q, which no longer serves a single runtime target; run that broker again as a flat instance serving %s",
				a.Slug, pin.RuntimeTarget.String(), in.Broker.Name, pin.RuntimeTarget.String()))
	case *in.Broker.RuntimeTarget != pin.RuntimeTarget:
		return placementErr(api.CodeTargetMismatch, a,
			fmt.Sprintf("agent %q is pinned to runtime target %s, but its runtime broker %q now serves %s; run that broker again serving %s",
				a.Slug, pin.RuntimeTarget.String(), in.Broker.Name, in.Broker.RuntimeTarget.String(), pin.RuntimeTarget.String()))
	}
	return nil
}

// placementErr is Reach's refusal of a pinned agent: what is wrong,
// that nothing was sent, and what can be done while no per-agent repair
// exists. details name the agent's assignment and pin, for tools.
func placementErr(code string, a *store.Agent, what string) error {
	e := api.Conflict(code, "%s. Nothing was sent to any runtime broker, and no other broker is tried. "+
		"No per-agent repair exists in this release (ptone/scion#4844); deleting the agent's project with --force removes its record "+
		"but not its workload, which must then be removed on its runtime broker by hand", what).
		WithDetail("agent", a.Slug)
	if a.BrokerID != "" {
		e = e.WithDetail("brokerId", a.BrokerID)
	}
	if a.Pin != nil {
		e = e.WithDetail("pinnedRuntimeTarget", *a.Pin)
	}
	return e
}
