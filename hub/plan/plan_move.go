// The checks of a move (an agent reincarnated on another Runtime Broker)
// that depend only on the records. Moves come in a later change and run
// these first.

package plan

import (
	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// moveTargetCheck refuses a move that flat Runtime Brokers do not allow
// (spec, "Flat Runtime Brokers"): a pinned agent cannot be moved to
// another broker, and no agent can be moved onto a flat broker, both 409
// runtime_target_move_unsupported. It is nil for a move between regular
// brokers.
func moveTargetCheck(a *store.Agent, target *store.Broker) error {
	if a.Pin != nil {
		return api.Conflict(api.CodeTargetMoveUnsupported,
			"agent %s is pinned to runtime broker %s serving %s and cannot be moved to another runtime broker",
			api.Quote(a.Slug), api.Quote(a.Pin.BrokerID), a.Pin.RuntimeTarget.String()).WithDetail("pinnedRuntimeTarget", *a.Pin)
	}
	if target.RuntimeTarget != nil {
		return api.Conflict(api.CodeTargetMoveUnsupported,
			"runtime broker %s is a flat instance serving %s: agents cannot be moved onto a flat runtime broker",
			api.Quote(target.Name), target.RuntimeTarget.String()).WithDetail("broker", target.Name)
	}
	return nil
}
