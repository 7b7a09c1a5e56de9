package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/splitplan"
	"github.com/scion-go/scion/internal/testenv"
)

// plan-split reads the legacy broker's maxAgents and reservations and the
// hub-wide limit from a real Hub and prints the spec's plan; nothing on
// the Hub changes.
func TestPlanSplit(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	legacy := e.Brokers()[0]
	setMax := func(req api.UpdateBrokerRequest) {
		t.Helper()
		if _, err := e.Admin.UpdateBroker(ctx, legacy.ID, req); err != nil {
			t.Fatal(err)
		}
	}
	ten := 10
	setMax(api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &ten}})
	for i := range 4 {
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: fmt.Sprintf("a%d", i), Project: "default",
			Broker: legacy.Name, Start: true, Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	useHub(t, "team", e.URL, e.AdminToken)

	// L=10 across three instances: 4, 3, 3; the first receives the 4
	// agents and has room for them.
	r := mustRun(t, "runtime-broker", "plan-split", legacy.Name, "--instances", "local-docker,k8s-batch,k8s-gpu")
	for _, want := range []string{"verdict: split", "legacy maxAgents: 10", "active reservations: 4", "hub max_agents_per_broker: 100",
		"local-docker 4 yes", "k8s-batch 3 no", "k8s-gpu 3 no"} {
		if !strings.Contains(squeeze(r.out), want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "Flagged") {
		t.Errorf("unflagged plan flagged:\n%s", r.out)
	}

	// The receiving instance named, with 3 slots for 4 reservations: flagged.
	v := planJSON(t, 0, legacy.Name, "--instances", "local-docker,k8s-batch,k8s-gpu", "--receiving", "k8s-batch")
	if v.Verdict != splitplan.Split || caps(v) != "4,3,3" || v.LegacyBroker.ID != legacy.ID || v.LegacyBroker.MaxAgents == nil ||
		*v.LegacyBroker.MaxAgents != 10 || v.LegacyBroker.ActiveReservations != 4 || v.HubMaxAgentsPerBroker != 100 || !v.QuotasEnforced {
		t.Errorf("%+v", v)
	}
	if len(v.Flags) != 1 || v.Flags[0].Code != splitplan.FlagReceivingBelowReservations || !v.Instances[1].Receiving || v.Instances[0].Receiving {
		t.Errorf("flags %+v, instances %+v", v.Flags, v.Instances)
	}

	// The operator's caps, checked against the legacy limit.
	if v := planJSON(t, 0, legacy.Name, "--instances", "a,b", "--caps", "2,8", "--receiving", "b"); caps(v) != "2,8" || !v.OperatorCaps || len(v.Flags) != 0 {
		t.Errorf("operator caps: %+v", v)
	}
	if r := runCLI(t, "", "runtime-broker", "plan-split", legacy.Name, "--instances", "a,b", "--caps", "6,5"); r.code != exitUsage ||
		!strings.Contains(r.err, "the caps sum to 11, more than the legacy broker's maxAgents of 10") || r.out != "" {
		t.Errorf("caps over the limit: %+v", r)
	}
	if r := runCLI(t, "", "runtime-broker", "plan-split", legacy.Name, "--instances", "a,b", "--caps", "0,5"); r.code != exitUsage || !strings.Contains(r.err, "must be positive") {
		t.Errorf("a zero cap: %+v", r)
	}

	// L=2 for three instances: an operator decision, exit 3, plan printed.
	two := 2
	setMax(api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &two}})
	if v := planJSON(t, exitDecisionRequired, legacy.Name, "--instances", "a,b,c"); v.Verdict != splitplan.OperatorDecisionRequired || caps(v) != "" {
		t.Errorf("L=2, n=3: %+v", v)
	}
	// Inherited: an operator decision too; the text says why.
	setMax(api.UpdateBrokerRequest{ClearMaxAgents: true})
	r = runCLI(t, "", "runtime-broker", "plan-split", legacy.Name, "--instances", "a,b,c")
	if out := squeeze(r.out); r.code != exitDecisionRequired || !strings.Contains(out, "verdict: operator_decision_required") ||
		!strings.Contains(out, "legacy maxAgents: none (inherits)") || !strings.Contains(out, "aggregate would be 3 times larger") || r.err != "" {
		t.Errorf("inherited: %+v", r)
	}
	// L=0: nothing needed. With the hub-wide limit at 0, flagged.
	zero := 0
	setMax(api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &zero}})
	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 0}); err != nil {
		t.Fatal(err)
	}
	v = planJSON(t, 0, legacy.Name, "--instances", "a,b,c")
	if v.Verdict != splitplan.NothingNeeded || caps(v) != "" || v.QuotasEnforced || len(v.Flags) != 1 || v.Flags[0].Code != splitplan.FlagQuotasNotEnforced {
		t.Errorf("L=0 with quotas off: %+v", v)
	}

	// Nothing above changed the broker's setting but the test's own.
	if b, err := e.Admin.GetBroker(ctx, legacy.ID); err != nil || b.Settings.MaxAgents == nil || *b.Settings.MaxAgents != 0 {
		t.Errorf("legacy broker after planning: %+v, %v", b, err)
	}
}

func TestPlanSplitRefusals(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	registerBroker(t, e, "old")
	before := hubRequests(t, e)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"old"}, "--instances is required"},
		{[]string{"old", "--instances", "a,Bad_Name"}, "instance"},
		{[]string{"old", "--instances", "a", "--caps", "x"}, "--caps"},
		{[]string{"--instances", "a"}, "legacy-broker"},
	} {
		r := runCLI(t, "", append([]string{"runtime-broker", "plan-split"}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.err, tc.want) {
			t.Errorf("%v: %+v, want exit 2 with %q", tc.args, r, tc.want)
		}
	}
	if n := hubRequests(t, e) - before; n != 0 {
		t.Errorf("%d requests for command lines refused locally", n)
	}
	// The planner's own refusals: a bad command line too.
	if r := runCLI(t, "", "runtime-broker", "plan-split", "old", "--instances", "a,a"); r.code != exitUsage || !strings.Contains(r.err, `instance "a" is named twice`) {
		t.Errorf("a,a: %+v", r)
	}
	if r := runCLI(t, "", "runtime-broker", "plan-split", "nope", "--instances", "a"); r.code != 1 || !strings.Contains(r.err, "error: runtime_broker_not_found: ") {
		t.Errorf("unknown broker: %+v", r)
	}
}

func planJSON(t *testing.T, code int, args ...string) splitView {
	t.Helper()
	r := runCLI(t, "", append([]string{"runtime-broker", "plan-split", "-o", "json"}, args...)...)
	if r.code != code {
		t.Fatalf("plan-split %v: exit %d, want %d\n%s%s", args, r.code, code, r.out, r.err)
	}
	var v splitView
	if err := json.Unmarshal([]byte(r.out), &v); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	return v
}

// caps is the plan's caps as "4,3,3", "" when none is planned.
func caps(v splitView) string {
	var out []string
	for _, inst := range v.Instances {
		if inst.MaxAgents != nil {
			out = append(out, fmt.Sprint(*inst.MaxAgents))
		}
	}
	return strings.Join(out, ",")
}

// squeeze is s with every run of white space one space: table columns
// compared without their padding.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
