package hub

import (
	"context"

	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// The loads of plan.Reach (hub/plan/plan_reach.go) for the operations that reach
// a broker for an existing agent outside plan.Action and plan.Delete: the
// streams (logs, exec, attach) and the delivery of queued dispatches.

// loadReach reads what plan.Reach decides on for agent a: the record of
// the broker it is assigned to, and whether the broker its pin names is
// still registered (withPinned).
func (s *Server) loadReach(ctx context.Context, a *store.Agent) (plan.ReachInput, error) {
	in := plan.ReachInput{Agent: a}
	if a.BrokerID != "" {
		b, err := s.store.GetBroker(ctx, a.BrokerID)
		switch {
		case isNotFound(err):
			in.BrokerMissing = true
		case err != nil:
			return in, err
		default:
			in.Broker = b
		}
	}
	return s.withPinned(ctx, in)
}

// withPinned fills in.PinnedMissing for a pinned agent. The pinned broker
// is read only when the pin names another broker than the assigned one,
// whose record in holds already.
func (s *Server) withPinned(ctx context.Context, in plan.ReachInput) (plan.ReachInput, error) {
	pin := in.Agent.Pin
	if pin == nil || pin.BrokerID == "" {
		return in, nil
	}
	if pin.BrokerID == in.Agent.BrokerID {
		in.PinnedMissing = in.BrokerMissing
		return in, nil
	}
	_, err := s.store.GetBroker(ctx, pin.BrokerID)
	if isNotFound(err) {
		in.PinnedMissing, err = true, nil
	}
	return in, err
}

// checkReach runs plan.Reach for a pinned agent a before a stream is
// opened to its broker. An unpinned agent's rules (no broker, a broker
// no longer registered) are the ones its stream meets when its broker has
// no session (orBrokerMissing), which needs no read while it has one.
func (s *Server) checkReach(ctx context.Context, a *store.Agent) error {
	if a.Pin == nil {
		return nil
	}
	in, err := s.loadReach(ctx, a)
	if err != nil {
		return err
	}
	return plan.Reach(in)
}
