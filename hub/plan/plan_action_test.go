package plan

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

var tVerbs = []string{"start", "stop", "restart", "suspend", "resume"}

// tAgentOn is an agent of the owner's on broker b1, in phase, with the
// container status that phase usually has.
func tAgentOn(phase string) *store.Agent {
	cs := map[string]string{api.PhaseRunning: api.ContainerRunning, api.PhaseStopping: api.ContainerRunning,
		api.PhaseStopped: api.ContainerExited, api.PhaseSuspended: api.ContainerPaused, api.PhaseCreated: api.ContainerCreated}[phase]
	return &store.Agent{ID: "a1", Slug: "a", ProjectID: "p1", BrokerID: "b1", RunID: "run-1", Role: authz.AgentRoleWorker,
		CreatedBy: "user:u-owner", Delegator: "user:u-owner", Phase: phase, ContainerStatus: cs}
}

// tAction is verb on a running agent by its owner, with broker b1.
func tAction(verb string, mod ...func(*ActionInput)) ActionInput {
	in := ActionInput{Verb: verb, Caller: tOwner, Agent: tAgentOn(api.PhaseRunning), Broker: tBroker("b1"), FreshKey: "fresh"}
	for _, m := range mod {
		m(&in)
	}
	return in
}

func TestPlanActionRefusals(t *testing.T) {
	missing := func(in *ActionInput) { in.Broker, in.BrokerMissing = nil, true }
	coordinator := func(in *ActionInput) { in.Agent.Role = authz.AgentRoleCoordinator }
	gcp := func(in *ActionInput) { in.Agent.Passthrough = "gcp" }
	type row struct {
		name   string
		in     ActionInput
		code   string
		status int
	}
	cases := []row{
		{"unknown verb", tAction("explode"), api.CodeNotFound, 404},
		{"Idempotency-Key too long", tAction("stop", func(in *ActionInput) { in.KeyHeader = strings.Repeat("k", api.MaxIdempotencyKeyLen+1) }), api.CodeInvalidRequest, 400},
		{"no broker", tAction("start", func(in *ActionInput) { in.Agent.BrokerID, in.Broker = "", nil }), api.CodeConflict, 409},
		// Running a coordinator again needs its role's delegation.
		{"member restarts a coordinator", tAction("restart", coordinator), "refused", 0},
		{"admin restarts a coordinator", tAction("restart", coordinator, func(in *ActionInput) { in.Caller = tAdmin }), "", 0},
		{"a coordinator restarts itself", tAction("restart", coordinator, func(in *ActionInput) {
			in.Caller = authz.Caller{Kind: authz.Agent, ID: "a1", ProjectID: "p1", Role: authz.AgentRoleCoordinator}
		}), "", 0},
		{"stopping a coordinator needs no delegation", tAction("stop", coordinator), "", 0},
		// The authority check comes before Reach.
		{"member restarts a coordinator on a missing broker", tAction("restart", coordinator, missing), "refused", 0},
		{"passthrough the broker no longer allows", tAction("start", gcp), "refused", 0},
		{"stopping it needs no passthrough", tAction("stop", gcp), "", 0},
	}
	// Reach: a broker no longer registered is reached by no action.
	for _, v := range tVerbs {
		cases = append(cases, row{v + " on a missing broker", tAction(v, missing), api.CodeBrokerMissing, 409})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Action(tc.in)
			wantErr(t, err, tc.code, tc.status)
		})
	}
}

func TestPlanActionRoute(t *testing.T) {
	for _, v := range tVerbs {
		p, err := Action(tAction(v))
		if err != nil {
			t.Fatal(v, err)
		}
		// Only a stop is queued for an offline broker; every action gets
		// 503 for a broker offline when it is not queued.
		if p.QueueIfOffline != (v == "stop") {
			t.Errorf("%s: QueueIfOffline %v", v, p.QueueIfOffline)
		}
		wantErr(t, p.Offline, api.CodeBrokerOffline, http.StatusServiceUnavailable)
		if d := api.AsError(p.Offline).Details["broker"]; d != "name-b1" {
			t.Errorf("%s: the offline answer names broker %v", v, d)
		}
		if p.Key != v+":fresh" || p.ClientKey != "" {
			t.Errorf("%s: keys %q %q", v, p.Key, p.ClientKey)
		}
	}
	// The caller's key, scoped to the action, the agent and the caller:
	// both the dispatch's and a queued stop's.
	p, _ := Action(tAction("stop", func(in *ActionInput) { in.KeyHeader = "k1" }))
	if want := "stop:a1:user:u-owner:k1"; p.Key != want || p.ClientKey != want {
		t.Fatalf("keys %q %q, want %q", p.Key, p.ClientKey, want)
	}
	// A user running again an agent with no recorded provenance becomes
	// its delegator; an agent doing it does not.
	noProvenance := func(in *ActionInput) { in.Agent.Delegator = "" }
	p, _ = Action(tAction("start", noProvenance))
	if !p.Redelegate || p.Delegator != "user:u-owner" {
		t.Fatalf("user: %+v", p)
	}
	p, _ = Action(tAction("stop", noProvenance))
	if p.Redelegate {
		t.Fatal("a stop records no delegator")
	}
	p, _ = Action(tAction("start", noProvenance, func(in *ActionInput) {
		in.Caller = authz.Caller{Kind: authz.Agent, ID: "a1", ProjectID: "p1", Role: authz.AgentRoleWorker}
	}))
	if p.Redelegate {
		t.Fatal("an agent starting itself records no delegator")
	}
}

// TestPlanActionRun is each action on each phase, on a broker whose
// session is ready.
func TestPlanActionRun(t *testing.T) {
	type want struct{ reserve, stopping, recreate bool }
	failed := func() *store.Agent { a := tAgentOn(api.PhaseError); return a } // its create refused: nothing on the broker
	crashed := func() *store.Agent { a := tAgentOn(api.PhaseError); a.ContainerStatus = api.ContainerExited; return a }
	phases := map[string]func() *store.Agent{
		api.PhaseCreated:       func() *store.Agent { return tAgentOn(api.PhaseCreated) },
		api.PhaseProvisioning:  func() *store.Agent { return tAgentOn(api.PhaseProvisioning) },
		api.PhaseRunning:       func() *store.Agent { return tAgentOn(api.PhaseRunning) },
		api.PhaseStopping:      func() *store.Agent { return tAgentOn(api.PhaseStopping) },
		api.PhaseStopped:       func() *store.Agent { return tAgentOn(api.PhaseStopped) },
		api.PhaseSuspended:     func() *store.Agent { return tAgentOn(api.PhaseSuspended) },
		"error (no container)": failed,
		"error (exited)":       crashed,
	}
	for _, v := range tVerbs {
		for name, agent := range phases {
			a := agent()
			running := v == "start" || v == "restart" || v == "resume"
			w := want{
				reserve:  running,
				stopping: v == "stop" && a.Phase == api.PhaseRunning,
				recreate: running && name == "error (no container)",
			}
			t.Run(v+" "+name, func(t *testing.T) {
				plan, err := Action(tAction(v))
				if err != nil {
					t.Fatal(err)
				}
				run, err := ActionRun(RunInput{Plan: plan, Agent: a, Broker: tBroker("b1"), Limit: 7})
				if err != nil {
					t.Fatal(err)
				}
				if run.Reserve != w.reserve || run.MarkStopping != w.stopping || run.Recreate != w.recreate {
					t.Fatalf("reserve %v stopping %v recreate %v, want %+v", run.Reserve, run.MarkStopping, run.Recreate, w)
				}
				if run.Method != actions[v].method || run.MintToken != running || run.Key != v+":fresh" ||
					run.Ref != (wire.AgentRef{AgentID: "a1", RunID: "run-1"}) || (running && run.Limit != 7) {
					t.Fatalf("command %+v", run)
				}
			})
		}
	}
	// Creating it again is refused before a slot is taken when the caller
	// may not hand over its secrets; the refusal matters only then.
	refusal := api.Forbidden("you may not use secret X")
	for _, tc := range []struct {
		verb  string
		agent *store.Agent
		err   bool
	}{
		{"start", failed(), true},
		{"resume", failed(), true},
		{"start", crashed(), false},
		{"stop", failed(), false},
	} {
		plan, _ := Action(tAction(tc.verb))
		_, err := ActionRun(RunInput{Plan: plan, Agent: tc.agent, Broker: tBroker("b1"), RecreateErr: refusal})
		if (err != nil) != tc.err {
			t.Errorf("%s on %s/%q: %v", tc.verb, tc.agent.Phase, tc.agent.ContainerStatus, err)
		}
	}
	plan, _ := Action(tAction("start"))
	run, _ := ActionRun(RunInput{Plan: plan, Agent: tAgentOn(api.PhaseStopped), Broker: tBroker("b1"), Limit: 2})
	a := tAgentOn(api.PhaseStopped)
	wantErr(t, run.ReserveErr(a, fmt.Errorf("reserve: %w", store.ErrQuota)), api.CodeQuotaExceeded, http.StatusTooManyRequests)
	wantErr(t, run.ReserveErr(a, fmt.Errorf("reserve: %w", store.ErrReservationScope)), api.CodeReservationScopeConflict, http.StatusConflict)
	if err := errors.New("db"); run.ReserveErr(a, err) != err {
		t.Fatal("other errors pass through")
	}
}

func TestPlanOutcome(t *testing.T) {
	lost := &OfflineLost{api.Errorf(api.CodeBrokerOffline, "went offline")}
	unavailable := api.Errorf(api.CodeBrokerUnavailable, "channel lost")
	offline := api.Errorf(api.CodeBrokerOffline, "offline")
	refused := api.Errorf(api.CodeRuntimeError, "runtime says no")
	for _, tc := range []struct {
		verb string
		derr error
		want actionOutcome
	}{
		{"start", nil, actionOutcome{Record: true}},
		{"stop", nil, actionOutcome{Record: true}},
		{"start", refused, actionOutcome{Record: true}}, // phase error, slot released
		{"start", lost, actionOutcome{Unknown: true}},   // the reconnect's inventory settles it
		{"restart", unavailable, actionOutcome{Record: true}},
		{"stop", lost, actionOutcome{Failed: true, Requeue: true, Unknown: true}},
		{"stop", unavailable, actionOutcome{Failed: true, Requeue: true}},
		{"stop", offline, actionOutcome{Failed: true, Requeue: true}},
		{"stop", refused, actionOutcome{Failed: true}},
		{"suspend", lost, actionOutcome{Failed: true, Unknown: true}},
		{"suspend", refused, actionOutcome{Failed: true}},
	} {
		if got := Outcome(actions[tc.verb], tc.derr); got != tc.want {
			t.Errorf("%s after %v: %+v, want %+v", tc.verb, tc.derr, got, tc.want)
		}
	}
}

func TestPlanDelete(t *testing.T) {
	a := tAgentOn(api.PhaseRunning)
	for _, tc := range []struct {
		name   string
		in     DeleteInput
		want   deletePlan
		code   string
		status int
	}{
		{"no broker: the record only", DeleteInput{Agent: &store.Agent{ID: "a1"}}, deletePlan{}, "", 0},
		{"online: the broker's delete first", DeleteInput{Agent: a, Online: true}, deletePlan{Dispatch: true, Key: "delete:a1"}, "", 0},
		{"offline: refused", DeleteInput{Agent: a}, deletePlan{}, api.CodeBrokerOffline, 503},
		{"offline, forced: still refused", DeleteInput{Agent: a, Force: true}, deletePlan{}, api.CodeBrokerOffline, 503},
		{"missing broker", DeleteInput{Agent: a, BrokerMissing: true}, deletePlan{}, api.CodeBrokerMissing, 409},
		{"missing broker, forced: the record goes", DeleteInput{Agent: a, BrokerMissing: true, Force: true}, deletePlan{Forced: true}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Delete(tc.in)
			wantErr(t, err, tc.code, tc.status)
			if got != tc.want {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestPlanActionMatrix is every action on every phase and broker state:
// a missing broker refuses all (runtime_broker_missing), an offline one
// queues a stop (202) and refuses the rest (503); an online one gets the
// writes and the command of the table.
func TestPlanActionMatrix(t *testing.T) {
	phases := []string{api.PhaseCreated, api.PhaseProvisioning, api.PhaseRunning, api.PhaseStopping,
		api.PhaseStopped, api.PhaseSuspended, "error, no container", "error, exited"}
	agentIn := func(phase string) *store.Agent {
		switch phase {
		case "error, no container":
			return tAgentOn(api.PhaseError)
		case "error, exited":
			a := tAgentOn(api.PhaseError)
			a.ContainerStatus = api.ContainerExited
			return a
		}
		return tAgentOn(phase)
	}
	// What an online broker gets, per phase in the order above: the
	// writes (reserve: the slot; stopping: phase stopping first) and the
	// command (recreate: the create, sent again with start).
	online := map[string][]string{
		"start":   {"reserve start", "reserve start", "reserve start", "reserve start", "reserve start", "reserve start", "reserve recreate", "reserve start"},
		"restart": {"reserve restart", "reserve restart", "reserve restart", "reserve restart", "reserve restart", "reserve restart", "reserve recreate", "reserve restart"},
		"resume":  {"reserve resume", "reserve resume", "reserve resume", "reserve resume", "reserve resume", "reserve resume", "reserve recreate", "reserve resume"},
		"stop":    {"stop", "stop", "stopping stop", "stop", "stop", "stop", "stop", "stop"},
		"suspend": {"suspend", "suspend", "suspend", "suspend", "suspend", "suspend", "suspend", "suspend"},
	}
	for _, v := range tVerbs {
		for i, ph := range phases {
			for _, state := range []string{"online", "offline", "missing"} {
				t.Run(v+"/"+ph+"/"+state, func(t *testing.T) {
					in := tAction(v, func(in *ActionInput) { in.Agent = agentIn(ph) })
					if state == "missing" {
						in.Broker, in.BrokerMissing = nil, true
					}
					plan, err := Action(in)
					switch state {
					case "missing":
						wantErr(t, err, api.CodeBrokerMissing, http.StatusConflict)
						return
					case "offline":
						if err != nil {
							t.Fatal(err)
						}
						if v == "stop" {
							if !plan.QueueIfOffline {
								t.Fatal("a stop for an offline broker is queued")
							}
							return
						}
						if plan.QueueIfOffline {
							t.Fatal("only a stop is queued")
						}
						wantErr(t, plan.Offline, api.CodeBrokerOffline, http.StatusServiceUnavailable)
						return
					}
					run, err := ActionRun(RunInput{Plan: plan, Agent: agentIn(ph), Broker: in.Broker, Limit: 5})
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					if run.Reserve {
						got = append(got, "reserve")
					}
					if run.MarkStopping {
						got = append(got, "stopping")
					}
					if run.Recreate {
						got = append(got, "recreate")
					} else {
						got = append(got, v)
					}
					if g := strings.Join(got, " "); g != online[v][i] {
						t.Fatalf("%q, want %q", g, online[v][i])
					}
				})
			}
		}
	}
}

// TestPlanDeleteMatrix: a delete does not depend on the agent's phase,
// only on its broker's state and --force.
func TestPlanDeleteMatrix(t *testing.T) {
	for _, ph := range []string{api.PhaseCreated, api.PhaseProvisioning, api.PhaseRunning, api.PhaseStopping,
		api.PhaseStopped, api.PhaseSuspended, api.PhaseError} {
		for _, tc := range []struct {
			state string
			force bool
			want  string
		}{
			{"online", false, "dispatch"}, {"online", true, "dispatch"},
			{"offline", false, api.CodeBrokerOffline}, {"offline", true, api.CodeBrokerOffline},
			{"missing", false, api.CodeBrokerMissing}, {"missing", true, "forced"},
		} {
			in := DeleteInput{Agent: tAgentOn(ph), Force: tc.force, Online: tc.state == "online", BrokerMissing: tc.state == "missing"}
			p, err := Delete(in)
			got := map[bool]string{true: "dispatch", false: "forced"}[p.Dispatch]
			if err != nil {
				got = api.AsError(err).Code
			}
			if got != tc.want {
				t.Errorf("delete %s, broker %s, force %v: %s, want %s", ph, tc.state, tc.force, got, tc.want)
			}
		}
	}
}

// TestActionRecord: the record an action writes with its slot, decided on
// the agent as stored (a retry after a conflict decides again).
func TestActionRecord(t *testing.T) {
	redelegate := ActionPlan{Redelegate: true, Delegator: "user:u1"}
	stopping := RunPlan{MarkStopping: true}
	with := func(a *store.Agent, f func(*store.Agent)) *store.Agent { f(a); return a }
	for _, tc := range []struct {
		name      string
		plan      ActionPlan
		run       RunPlan
		agent     *store.Agent
		changed   bool
		delegator string
		phase     string
	}{
		{"nothing to write", ActionPlan{}, RunPlan{Reserve: true}, tAgentOn(api.PhaseStopped), false, "", ""},
		{"delegator", redelegate, RunPlan{Reserve: true}, with(tAgentOn(api.PhaseStopped), func(a *store.Agent) { a.Delegator = "" }), true, "user:u1", api.PhaseStopped},
		{"delegator recorded meanwhile", redelegate, RunPlan{Reserve: true}, with(tAgentOn(api.PhaseStopped), func(a *store.Agent) { a.Delegator = "user:u1" }), false, "", ""},
		{"stopping", ActionPlan{}, stopping, tAgentOn(api.PhaseRunning), true, tAgentOn(api.PhaseRunning).Delegator, api.PhaseStopping},
		{"no longer running", ActionPlan{}, stopping, tAgentOn(api.PhaseStopped), false, "", ""},
	} {
		before := *tc.agent
		next, changed := ActionRecord(tc.plan, tc.run, tc.agent)
		if changed != tc.changed || (next != nil) != changed {
			t.Fatalf("%s: changed %v, record %v; want changed %v", tc.name, changed, next, tc.changed)
		}
		if tc.agent.Delegator != before.Delegator || tc.agent.Phase != before.Phase {
			t.Fatalf("%s: the stored copy was changed", tc.name)
		}
		if changed && (next.Delegator != tc.delegator || next.Phase != tc.phase) {
			t.Fatalf("%s: delegator %q phase %q, want %q %q", tc.name, next.Delegator, next.Phase, tc.delegator, tc.phase)
		}
	}
}
