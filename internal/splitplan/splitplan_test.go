package splitplan

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func ptr(n int) *int { return &n }

func TestMake(t *testing.T) {
	abc := []string{"a", "b", "c"}
	const (
		split   = Split
		decide  = OperatorDecisionRequired
		nothing = NothingNeeded
		quotas  = FlagQuotasNotEnforced
		short   = FlagReceivingBelowReservations
	)
	tests := []struct {
		name string
		in   Input
		// want: the verdict, the caps in instance order (nil: none
		// planned), the receiving instance and the flags' codes.
		verdict   Verdict
		caps      []int
		receiving string
		flags     []string
		err       string // a substring of the refusal
	}{
		// The spec's rule and the examples.
		{name: "L=10 n=3: floor each, remainder to the first", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, Instances: abc},
			verdict: split, caps: []int{4, 3, 3}, receiving: "a"},
		{name: "the whole remainder goes to the first", in: Input{LegacyMaxAgents: ptr(11), HubMaxAgents: 100, QuotasEnforced: true, Instances: abc},
			verdict: split, caps: []int{5, 3, 3}, receiving: "a"},
		{name: "L=n: one each", in: Input{LegacyMaxAgents: ptr(3), HubMaxAgents: 100, QuotasEnforced: true, Instances: abc},
			verdict: split, caps: []int{1, 1, 1}, receiving: "a"},
		{name: "one instance takes the whole limit", in: Input{LegacyMaxAgents: ptr(7), HubMaxAgents: 100, QuotasEnforced: true, Instances: []string{"a"}},
			verdict: split, caps: []int{7}, receiving: "a"},
		{name: "L=2 n=3: fewer slots than instances", in: Input{LegacyMaxAgents: ptr(2), HubMaxAgents: 100, QuotasEnforced: true, Instances: abc},
			verdict: decide, receiving: "a"},
		{name: "inherited the hub default", in: Input{HubMaxAgents: 100, QuotasEnforced: true, Instances: abc},
			verdict: decide, receiving: "a"},
		{name: "inherited an unlimited hub default", in: Input{HubMaxAgents: 0, Instances: abc},
			verdict: decide, receiving: "a", flags: []string{quotas}},
		{name: "L=0 (unlimited) needs nothing", in: Input{LegacyMaxAgents: ptr(0), HubMaxAgents: 100, QuotasEnforced: true, Instances: abc},
			verdict: nothing, receiving: "a"},

		// The operator's caps.
		{name: "operator caps summing to L", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, Instances: abc, Caps: []int{2, 2, 6}},
			verdict: split, caps: []int{2, 2, 6}, receiving: "a"},
		{name: "operator caps summing to less than L", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, Instances: abc, Caps: []int{1, 1, 1}},
			verdict: split, caps: []int{1, 1, 1}, receiving: "a"},
		{name: "operator caps summing to more than L", in: Input{LegacyMaxAgents: ptr(10), Instances: abc, Caps: []int{4, 4, 3}},
			err: "the caps sum to 11, more than the legacy broker's maxAgents of 10"},
		{name: "an operator cap of 0 would be unlimited", in: Input{LegacyMaxAgents: ptr(10), Instances: abc, Caps: []int{5, 0, 5}},
			err: "the cap of instance b is 0: every cap must be positive"},
		{name: "a negative operator cap", in: Input{LegacyMaxAgents: ptr(10), Instances: abc, Caps: []int{5, 5, -1}},
			err: "the cap of instance c is -1"},
		// Caps that would wrap the sum around: their true sum is far above L.
		{name: "operator caps whose sum overflows", in: Input{LegacyMaxAgents: ptr(10), Instances: []string{"a", "b"}, Caps: []int{math.MaxInt, 2}},
			err: "the caps sum to more than the legacy broker's maxAgents of 10"},
		{name: "operator caps whose sum overflows past zero", in: Input{LegacyMaxAgents: ptr(math.MaxInt), Instances: abc, Caps: []int{math.MaxInt, math.MaxInt, 2}},
			err: "the caps sum to more than the legacy broker's maxAgents of"},
		{name: "operator caps summing to a huge L", in: Input{LegacyMaxAgents: ptr(math.MaxInt), HubMaxAgents: 1, QuotasEnforced: true, Instances: []string{"a", "b"}, Caps: []int{math.MaxInt - 1, 1}},
			verdict: split, caps: []int{math.MaxInt - 1, 1}, receiving: "a"},
		{name: "fewer operator caps than instances", in: Input{LegacyMaxAgents: ptr(10), Instances: abc, Caps: []int{5, 5}},
			err: "2 caps for 3 instances"},
		{name: "more operator caps than instances", in: Input{LegacyMaxAgents: ptr(10), Instances: abc, Caps: []int{1, 1, 1, 1}},
			err: "4 caps for 3 instances"},
		{name: "operator caps for L<n", in: Input{LegacyMaxAgents: ptr(2), Instances: abc, Caps: []int{1, 1, 1}},
			err: "operator caps apply only to a split"},
		{name: "operator caps for an inherited limit", in: Input{HubMaxAgents: 100, Instances: abc, Caps: []int{1, 1, 1}},
			err: "operator caps apply only to a split"},
		{name: "operator caps for L=0", in: Input{LegacyMaxAgents: ptr(0), Instances: abc, Caps: []int{1, 1, 1}},
			err: "operator caps apply only to a split"},

		// The flagged plans.
		{name: "split while quotas are not enforced", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 0, Instances: abc},
			verdict: split, caps: []int{4, 3, 3}, receiving: "a", flags: []string{quotas}},
		{name: "receiving first instance below the reservations", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, ActiveReservations: 5, Instances: abc},
			verdict: split, caps: []int{4, 3, 3}, receiving: "a", flags: []string{short}},
		{name: "receiving instance with exactly the reservations", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, ActiveReservations: 4, Instances: abc},
			verdict: split, caps: []int{4, 3, 3}, receiving: "a"},
		{name: "named receiving instance below the reservations", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, ActiveReservations: 4, Instances: abc, Receiving: "b"},
			verdict: split, caps: []int{4, 3, 3}, receiving: "b", flags: []string{short}},
		{name: "operator caps give the receiving instance room", in: Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, ActiveReservations: 8, Instances: abc, Receiving: "c", Caps: []int{1, 1, 8}},
			verdict: split, caps: []int{1, 1, 8}, receiving: "c"},
		{name: "both flags", in: Input{LegacyMaxAgents: ptr(10), ActiveReservations: 9, Instances: abc},
			verdict: split, caps: []int{4, 3, 3}, receiving: "a", flags: []string{quotas, short}},
		{name: "nothing needed, but the receiving instance inherits less than the reservations", in: Input{LegacyMaxAgents: ptr(0), HubMaxAgents: 100, QuotasEnforced: true, ActiveReservations: 150, Instances: abc},
			verdict: nothing, receiving: "a", flags: []string{short}},
		{name: "nothing needed, unlimited hub default", in: Input{LegacyMaxAgents: ptr(0), ActiveReservations: 150, Instances: abc},
			verdict: nothing, receiving: "a", flags: []string{quotas}},
		{name: "inherited, the receiving instance inherits less than the reservations", in: Input{HubMaxAgents: 10, QuotasEnforced: true, ActiveReservations: 12, Instances: abc},
			verdict: decide, receiving: "a", flags: []string{short}},

		// Input that is not a question.
		{name: "no instances", in: Input{LegacyMaxAgents: ptr(10)}, err: "no instances"},
		{name: "an instance named twice", in: Input{LegacyMaxAgents: ptr(10), Instances: []string{"a", "b", "a"}}, err: `instance "a" is named twice`},
		{name: "an empty instance name", in: Input{LegacyMaxAgents: ptr(10), Instances: []string{"a", ""}}, err: "empty"},
		{name: "an unknown receiving instance", in: Input{LegacyMaxAgents: ptr(10), Instances: abc, Receiving: "z"}, err: `the receiving instance "z" is not one of the instances (a, b, c)`},
		{name: "a negative legacy limit", in: Input{LegacyMaxAgents: ptr(-1), Instances: abc}, err: "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Make(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error containing %q", p, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (reasons %q)", p.Verdict, tc.verdict, p.Reasons)
			}
			if len(p.Reasons) == 0 {
				t.Error("no reason given")
			}
			var caps []int
			var recv []string
			for _, inst := range p.Instances {
				if inst.MaxAgents != nil {
					caps = append(caps, *inst.MaxAgents)
				}
				if inst.Receiving {
					recv = append(recv, inst.Name)
				}
			}
			if !slices.Equal(caps, tc.caps) {
				t.Errorf("caps %v, want %v", caps, tc.caps)
			}
			if caps != nil && len(caps) != len(p.Instances) {
				t.Errorf("%d caps for %d instances", len(caps), len(p.Instances))
			}
			if names := instanceNames(p); !slices.Equal(names, tc.in.Instances) {
				t.Errorf("instances %v, want %v in order", names, tc.in.Instances)
			}
			if !slices.Equal(recv, []string{tc.receiving}) {
				t.Errorf("receiving %v, want %s", recv, tc.receiving)
			}
			var codes []string
			for _, f := range p.Flags {
				codes = append(codes, f.Code)
			}
			if !slices.Equal(codes, tc.flags) {
				t.Errorf("flags %v, want %v (%+v)", codes, tc.flags, p.Flags)
			}
			if p.OperatorCaps != (tc.in.Caps != nil) {
				t.Errorf("operatorCaps %v with caps %v", p.OperatorCaps, tc.in.Caps)
			}
		})
	}
}

func instanceNames(p Plan) []string {
	var out []string
	for _, inst := range p.Instances {
		out = append(out, inst.Name)
	}
	return out
}

// A flag's message says what to look at: the instance and the numbers.
func TestReceivingFlagMessage(t *testing.T) {
	p, err := Make(Input{LegacyMaxAgents: ptr(10), HubMaxAgents: 100, QuotasEnforced: true, ActiveReservations: 7, Instances: []string{"a", "b"}, Receiving: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Flags) != 1 || !strings.Contains(p.Flags[0].Message, "the receiving instance b would get 5 slots, fewer than the legacy broker's 7 active reservations") {
		t.Errorf("%+v", p.Flags)
	}
}

// A reason says how the caps were made.
func TestSplitReason(t *testing.T) {
	for _, tc := range []struct {
		l, n int
		want string
	}{
		{10, 3, "the legacy broker's maxAgents of 10 split across 3 instances: 3 each, the remainder 1 to the first instance"},
		{9, 3, "the legacy broker's maxAgents of 9 split across 3 instances: 3 each"},
	} {
		p, err := Make(Input{LegacyMaxAgents: ptr(tc.l), HubMaxAgents: 100, QuotasEnforced: true, Instances: []string{"a", "b", "c"}[:tc.n]})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Reasons) != 1 || p.Reasons[0] != tc.want {
			t.Errorf("L=%d n=%d: %q, want %q", tc.l, tc.n, p.Reasons, tc.want)
		}
	}
}
