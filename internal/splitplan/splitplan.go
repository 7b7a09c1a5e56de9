// Package splitplan plans the agent caps of the flat Runtime Brokers that
// replace a legacy (profile-based) Runtime Broker, by the conversion rule
// of the multi-broker spec ("Capacity of flat Runtime Brokers").
//
// The limit applies per broker ID and every flat instance has its own ID,
// so a legacy broker's maxAgents copied to each of n instances would make
// the host's ceiling n times larger. The rule instead splits a positive
// legacy maxAgents L across the instances when L >= n (floor(L/n) each,
// the remainder to the first; or the operator's own positive caps summing
// to at most L), asks for an operator decision when L < n or when the
// legacy broker only inherited its limit (each instance would inherit it
// too), and needs nothing for L = 0 (unlimited). A plan made while broker
// quotas are not enforced, or whose receiving instance would get fewer
// slots than the legacy broker's active reservations, is flagged.
//
// Plan is a pure function over plain values: `scion runtime-broker
// plan-split` loads the inputs from the Hub and prints the result; nothing
// here writes any setting.
package splitplan

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Input is one split question.
type Input struct {
	// LegacyMaxAgents is the legacy broker's own maxAgents setting: nil
	// when it has none and inherits (a binding or the hub-wide default),
	// 0 for unlimited.
	LegacyMaxAgents *int
	// HubMaxAgents is the hub-wide max_agents_per_broker (0 = unlimited):
	// what an instance without its own maxAgents inherits.
	HubMaxAgents int
	// QuotasEnforced: the Hub enforces per-broker quotas for an instance
	// without its own maxAgents (see the caller for how it is decided).
	QuotasEnforced bool
	// ActiveReservations is how many capacity slots the legacy broker holds
	// now: the agents the receiving instance takes over.
	ActiveReservations int
	// Instances are the names of the flat instances, in order: the first
	// gets the remainder of a default split.
	Instances []string
	// Receiving is the instance that receives the legacy broker's agents;
	// "" is the first.
	Receiving string
	// Caps are the operator's caps, one per instance in order; nil for the
	// default split.
	Caps []int
}

// Verdict is what the legacy limit needs.
type Verdict string

// Verdicts.
const (
	// Split: set each instance's maxAgents to its planned cap.
	Split Verdict = "split"
	// OperatorDecisionRequired: no split keeps the aggregate; the
	// operator has to choose the instances' caps (Reasons say why).
	OperatorDecisionRequired Verdict = "operator_decision_required"
	// NothingNeeded: the legacy broker was unlimited; the instances need
	// no cap to keep its aggregate.
	NothingNeeded Verdict = "nothing_needed"
)

// Flag codes: a plan to review before applying it.
const (
	FlagQuotasNotEnforced = "quotas_not_enforced"
	// FlagReceivingBelowReservations: the receiving instance would get
	// fewer slots than the agents it takes over hold, so some of them
	// cannot start again until others stop.
	FlagReceivingBelowReservations = "receiving_instance_below_reservations"
)

// Instance is one instance in a plan.
type Instance struct {
	Name string `json:"name"`
	// MaxAgents is the planned cap (always positive); nil when the plan
	// sets none (a verdict other than Split): the instance then inherits
	// the hub-wide default.
	MaxAgents *int `json:"maxAgents"`
	Receiving bool `json:"receiving,omitempty"`
}

// Flag is one reason to review a plan.
type Flag struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Plan is the answer.
type Plan struct {
	Verdict   Verdict    `json:"verdict"`
	Instances []Instance `json:"instances"`
	// OperatorCaps: the caps are the operator's, not the default split.
	OperatorCaps bool     `json:"operatorCaps,omitempty"`
	Reasons      []string `json:"reasons"`
	Flags        []Flag   `json:"flags"`
}

// Make computes the plan, or refuses input that is not a question: no
// instance, a name twice, an unknown receiving instance, or operator caps
// that break the rule (each positive, one per instance, summing to at most
// the legacy maxAgents; only where a split applies).
func Make(in Input) (Plan, error) {
	if err := check(in); err != nil {
		return Plan{}, err
	}
	n := len(in.Instances)
	recv := in.Receiving
	if recv == "" {
		recv = in.Instances[0]
	}
	p := Plan{Reasons: []string{}, Flags: []Flag{}}
	var caps []int
	switch l := in.LegacyMaxAgents; {
	case l == nil:
		p.Verdict = OperatorDecisionRequired
		p.Reasons = append(p.Reasons, fmt.Sprintf("the legacy broker has no maxAgents of its own: it inherits %s, and each of the %d instances would inherit it too, so their aggregate would be %d times larger; "+
			"decide the instances' caps, for example by setting the legacy broker's maxAgents explicitly and planning again", inherited(in.HubMaxAgents), n, n))
	case *l == 0:
		p.Verdict = NothingNeeded
		p.Reasons = append(p.Reasons, "the legacy broker's maxAgents is 0 (unlimited): the instances need no cap to keep its aggregate")
	case *l < n:
		p.Verdict = OperatorDecisionRequired
		p.Reasons = append(p.Reasons, fmt.Sprintf("the legacy broker's maxAgents of %d cannot give each of the %d instances a positive cap (0 would mean unlimited); "+
			"decide the caps yourself, or replace it with fewer instances", *l, n))
	case in.Caps != nil:
		p.Verdict, p.OperatorCaps, caps = Split, true, in.Caps
		p.Reasons = append(p.Reasons, fmt.Sprintf("the operator's caps sum to %d of the legacy broker's maxAgents of %d", sum(caps), *l))
	default:
		p.Verdict, caps = Split, defaultSplit(*l, n)
		r := fmt.Sprintf("the legacy broker's maxAgents of %d split across %d instances: %d each", *l, n, *l/n)
		if *l%n != 0 {
			r += fmt.Sprintf(", the remainder %d to the first instance", *l%n)
		}
		p.Reasons = append(p.Reasons, r)
	}
	if in.Caps != nil && p.Verdict != Split {
		return Plan{}, fmt.Errorf("operator caps apply only to a split, and this legacy broker's limit is not split: %s", p.Reasons[0])
	}
	if in.Caps != nil {
		if err := checkCaps(in.Caps, in.Instances, *in.LegacyMaxAgents); err != nil {
			return Plan{}, err
		}
	}
	for i, name := range in.Instances {
		inst := Instance{Name: name, Receiving: name == recv}
		if caps != nil {
			c := caps[i]
			inst.MaxAgents = &c
		}
		p.Instances = append(p.Instances, inst)
	}
	p.Flags = flags(in, p, recv)
	return p, nil
}

// flags are the spec's two reasons to review a plan. The receiving
// instance's slots are its planned cap, or without one what it inherits.
func flags(in Input, p Plan, recv string) []Flag {
	out := []Flag{}
	if !in.QuotasEnforced {
		why := ""
		if in.HubMaxAgents == 0 {
			why = " (the hub-wide max_agents_per_broker is 0, unlimited)"
		}
		out = append(out, Flag{FlagQuotasNotEnforced, "broker quotas are not enforced" + why + ": an instance without its own maxAgents has no limit, so set every instance's cap"})
	}
	for _, inst := range p.Instances {
		if inst.Name != recv {
			continue
		}
		slots := in.HubMaxAgents
		if inst.MaxAgents != nil {
			slots = *inst.MaxAgents
		}
		if slots > 0 && slots < in.ActiveReservations {
			out = append(out, Flag{FlagReceivingBelowReservations, fmt.Sprintf("the receiving instance %s would get %d slots, fewer than the legacy broker's %d active reservations: %d of its agents could not start again until others stop",
				recv, slots, in.ActiveReservations, in.ActiveReservations-slots)})
		}
	}
	return out
}

// defaultSplit is floor(l/n) each, the remainder to the first.
func defaultSplit(l, n int) []int {
	caps := make([]int, n)
	for i := range caps {
		caps[i] = l / n
	}
	caps[0] += l % n
	return caps
}

func check(in Input) error {
	if len(in.Instances) == 0 {
		return errors.New("no instances: name the flat instances that replace the legacy broker")
	}
	seen := map[string]bool{}
	for _, name := range in.Instances {
		if name == "" {
			return errors.New("an instance name is empty")
		}
		if seen[name] {
			return fmt.Errorf("instance %q is named twice", name)
		}
		seen[name] = true
	}
	if in.Receiving != "" && !seen[in.Receiving] {
		return fmt.Errorf("the receiving instance %q is not one of the instances (%s)", in.Receiving, strings.Join(in.Instances, ", "))
	}
	if in.LegacyMaxAgents != nil && *in.LegacyMaxAgents < 0 {
		return fmt.Errorf("the legacy maxAgents %d is negative", *in.LegacyMaxAgents)
	}
	if in.HubMaxAgents < 0 || in.ActiveReservations < 0 {
		return errors.New("the hub-wide limit and the active reservations cannot be negative")
	}
	return nil
}

// checkCaps holds the operator's caps to the rule: one per instance, each
// positive (0 would be unlimited), summing to at most the legacy l.
func checkCaps(caps []int, names []string, l int) error {
	if len(caps) != len(names) {
		return fmt.Errorf("%d caps for %d instances: give one cap per instance, in the instances' order", len(caps), len(names))
	}
	for i, c := range caps {
		if c <= 0 {
			return fmt.Errorf("the cap of instance %s is %d: every cap must be positive (0 would make the instance unlimited)", names[i], c)
		}
	}
	s, fits := positiveSum(caps)
	if !fits {
		// A wrapped-around sum would compare as at most l.
		return fmt.Errorf("the caps sum to more than the legacy broker's maxAgents of %d (beyond the largest integer): the instances' aggregate must not grow", l)
	}
	if s > l {
		return fmt.Errorf("the caps sum to %d, more than the legacy broker's maxAgents of %d: the instances' aggregate must not grow", s, l)
	}
	return nil
}

// positiveSum is the sum of positive xs, and false when it does not fit
// in an int.
func positiveSum(xs []int) (int, bool) {
	s := 0
	for _, x := range xs {
		if x > math.MaxInt-s {
			return 0, false
		}
		s += x
	}
	return s, true
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func inherited(hub int) string {
	if hub == 0 {
		return "the hub-wide max_agents_per_broker of 0 (unlimited)"
	}
	return fmt.Sprintf("the hub-wide max_agents_per_broker of %d", hub)
}
