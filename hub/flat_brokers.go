// Flat Runtime Brokers (multi-broker spec, "Flat Runtime Brokers
// (experimental)"): the Hub's side of their registration and of their
// hello. A flat broker serves exactly one runtime target; its record
// carries it (store.Broker.RuntimeTarget), and it never offers profiles.
//
// The hub.flat_runtime_brokers experiment gates only first
// registrations: a registration naming a target, or the first hello that
// declares a target for a record without one. A broker already recorded
// with a target keeps working when the experiment is turned off later,
// so that its pinned agents stay reachable.

package hub

import (
	"context"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// experimentOn reports whether the named Hub experiment is on.
func (s *Server) experimentOn(ctx context.Context, name string) (bool, error) {
	v, err := s.settings.Hub(ctx)
	if err != nil {
		return false, err
	}
	return v.Experiments[name], nil
}

// checkFlatRegistration is the check before a flat instance's first
// registration: a complete target, and the experiment on (409
// experiment_disabled otherwise). target nil is a regular broker: no
// check.
func (s *Server) checkFlatRegistration(ctx context.Context, name string, target *api.RuntimeTarget) error {
	if target == nil {
		return nil
	}
	if err := target.Check("runtimeTarget"); err != nil {
		return err
	}
	on, err := s.experimentOn(ctx, api.ExperimentFlatRuntimeBrokers)
	if err != nil {
		return err
	}
	if !on {
		return flatExperimentOff(name, *target)
	}
	return nil
}

// flatExperimentOff is the refusal of a flat instance's first
// registration while the experiment is off.
func flatExperimentOff(name string, t api.RuntimeTarget) error {
	return api.Conflict(api.CodeExperimentDisabled,
		"runtime broker %s is a flat instance serving %s, and flat Runtime Brokers are an experiment that is off on this Hub: an admin turns it on with 'scion hub settings set --experiment %s=on'",
		api.Quote(name), t.String(), api.ExperimentFlatRuntimeBrokers).WithDetail("experiment", api.ExperimentFlatRuntimeBrokers)
}

// checkMaxAgents refuses a negative per-broker limit (nil inherits the
// hub-wide default, 0 is unlimited).
func checkMaxAgents(n *int) error {
	if n != nil && *n < 0 {
		return api.BadRequest("maxAgents must be 0 (unlimited) or more")
	}
	return nil
}

// helloTarget decides what a broker's hello makes of its record's
// runtime target, and returns the target to record: the hello's (nil
// clears it: the broker no longer serves a single target; the placement
// check then refuses its pinned agents). It refuses, with the record
// untouched, a hello that declares a target and offers profiles too (a
// flat instance never uses profiles), an incomplete target (400), and a
// target declared for a record that has none while the experiment is
// off (409 experiment_disabled: that is a first registration as a flat
// instance). A broker recorded with a target keeps its hello accepted
// when the experiment is turned off later.
func helloTarget(b *store.Broker, h *wire.Hello, experimentOn bool) (*api.RuntimeTarget, error) {
	t := h.RuntimeTarget
	if t == nil {
		return nil, nil
	}
	if len(h.Profiles) > 0 {
		return nil, api.BadRequest("bad hello: runtime broker %s declares the runtime target %s and offers profiles; a flat instance serves its one target and uses no profiles",
			api.Quote(b.Name), t.String())
	}
	if err := t.Check("hello runtimeTarget"); err != nil {
		return nil, err
	}
	if b.RuntimeTarget == nil && !experimentOn {
		return nil, flatExperimentOff(b.Name, *t)
	}
	c := *t
	return &c, nil
}

// clonePin is a copy of an agent's pin (nil: none), so that no view or
// command shares the record's.
func clonePin(p *api.PinnedRuntimeTarget) *api.PinnedRuntimeTarget {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
