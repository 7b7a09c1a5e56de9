package plan

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

var (
	tDocker = api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	tKube   = api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "agents"}
)

// tPinned is a running agent pinned to flat broker b1 serving target.
func tPinned(target api.RuntimeTarget) *store.Agent {
	a := tAgentOn(api.PhaseRunning)
	a.Pin = &api.PinnedRuntimeTarget{BrokerID: "b1", RuntimeTarget: target}
	return a
}

// tFlat is flat broker id serving target (nil: a profile-based one).
func tFlat(id string, target *api.RuntimeTarget) *store.Broker {
	return tBroker(id, func(b *store.Broker) { b.RuntimeTarget = target })
}

// TestReachCheck holds every condition of the spec's "Inconsistent agent
// placement" and today's rules for an unpinned agent, then the order in
// which several at once are reported.
func TestReachCheck(t *testing.T) {
	kube := tKube
	otherNS := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "other"}
	otherCtx := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "prod", Namespace: "agents"}
	docker := tDocker
	with := func(a *store.Agent, f func(*store.Agent)) *store.Agent { f(a); return a }
	type row struct {
		name string
		in   ReachInput
		code string
	}
	for _, tc := range []row{
		// An agent without a pin: today's rules.
		{"unpinned on its broker", ReachInput{Agent: tAgentOn(api.PhaseRunning), Broker: tBroker("b1")}, ""},
		{"unpinned, no broker", ReachInput{Agent: with(tAgentOn(api.PhaseRunning), func(a *store.Agent) { a.BrokerID = "" })}, api.CodeConflict},
		{"unpinned, broker deregistered", ReachInput{Agent: tAgentOn(api.PhaseRunning), BrokerMissing: true}, api.CodeBrokerMissing},
		{"unpinned on a flat broker: not checked", ReachInput{Agent: tAgentOn(api.PhaseRunning), Broker: tFlat("b1", &kube)}, ""},

		// A pinned agent whose placement holds.
		{"pinned, docker", ReachInput{Agent: tPinned(tDocker), Broker: tFlat("b1", &docker)}, ""},
		{"pinned, kubernetes", ReachInput{Agent: tPinned(tKube), Broker: tFlat("b1", &kube)}, ""},

		// The spec's conditions, one at a time.
		{"pin incomplete: no broker ID", ReachInput{Agent: with(tPinned(tDocker), func(a *store.Agent) { a.Pin.BrokerID = "" }), Broker: tFlat("b1", &docker)}, api.CodeTargetPinStale},
		{"pin incomplete: no type", ReachInput{Agent: tPinned(api.RuntimeTarget{}), Broker: tFlat("b1", &docker)}, api.CodeTargetPinStale},
		{"pin incomplete: unknown type", ReachInput{Agent: tPinned(api.RuntimeTarget{Type: "podman"}), Broker: tFlat("b1", &docker)}, api.CodeTargetPinStale},
		{"pin incomplete: kubernetes without namespace", ReachInput{Agent: tPinned(api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch"}), Broker: tFlat("b1", &kube)}, api.CodeTargetPinStale},
		{"pin incomplete: kubernetes without context", ReachInput{Agent: tPinned(api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Namespace: "agents"}), Broker: tFlat("b1", &kube)}, api.CodeTargetPinStale},
		{"pinned broker deregistered", ReachInput{Agent: tPinned(tDocker), BrokerMissing: true, PinnedMissing: true}, api.CodeBrokerMissing},
		{"pinned broker deregistered (only BrokerMissing said)", ReachInput{Agent: tPinned(tDocker), BrokerMissing: true}, api.CodeBrokerMissing},
		{"no broker", ReachInput{Agent: with(tPinned(tDocker), func(a *store.Agent) { a.BrokerID = "" })}, api.CodeTargetPinStale},
		{"pin names another broker", ReachInput{Agent: with(tPinned(tDocker), func(a *store.Agent) { a.BrokerID = "b2" }), Broker: tFlat("b2", &docker)}, api.CodeTargetPinStale},
		{"pin names another broker, the assigned one deregistered", ReachInput{Agent: with(tPinned(tDocker), func(a *store.Agent) { a.BrokerID = "b2" }), BrokerMissing: true}, api.CodeTargetPinStale},
		{"broker serves no single target", ReachInput{Agent: tPinned(tKube), Broker: tFlat("b1", nil)}, api.CodeTargetMismatch},
		{"broker serves another type", ReachInput{Agent: tPinned(tKube), Broker: tFlat("b1", &docker)}, api.CodeTargetMismatch},
		{"broker serves another namespace", ReachInput{Agent: tPinned(tKube), Broker: tFlat("b1", &otherNS)}, api.CodeTargetMismatch},
		{"broker serves another context", ReachInput{Agent: tPinned(tKube), Broker: tFlat("b1", &otherCtx)}, api.CodeTargetMismatch},
		{"assigned broker not read", ReachInput{Agent: tPinned(tKube)}, api.CodeBrokerMissing},

		// The order, when several hold at once.
		{"incomplete pin before its broker deregistered", ReachInput{Agent: tPinned(api.RuntimeTarget{Type: "podman"}), BrokerMissing: true, PinnedMissing: true}, api.CodeTargetPinStale},
		{"incomplete pin before no broker", ReachInput{Agent: with(tPinned(api.RuntimeTarget{}), func(a *store.Agent) { a.BrokerID = "" })}, api.CodeTargetPinStale},
		{"pinned broker deregistered before no broker", ReachInput{Agent: with(tPinned(tDocker), func(a *store.Agent) { a.BrokerID = "" }), PinnedMissing: true}, api.CodeBrokerMissing},
		{"pinned broker deregistered before another broker", ReachInput{Agent: with(tPinned(tDocker), func(a *store.Agent) { a.BrokerID = "b2" }), Broker: tFlat("b2", &docker), PinnedMissing: true}, api.CodeBrokerMissing},
		{"another broker before its target", ReachInput{Agent: with(tPinned(tKube), func(a *store.Agent) { a.BrokerID = "b2" }), Broker: tFlat("b2", nil)}, api.CodeTargetPinStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Reach(tc.in)
			if tc.code == "" {
				wantErr(t, err, "", 0)
				return
			}
			wantErr(t, err, tc.code, http.StatusConflict)
			if tc.in.Agent.Pin == nil {
				return
			}
			// A pinned agent's refusal says nothing was sent, that no
			// per-agent repair exists, and where its recovery is tracked.
			msg := api.AsError(err).Message
			for _, want := range []string{"Nothing was sent to any runtime broker", "no other broker is tried", "ptone/scion#4844", "--force"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			if d := api.AsError(err).Details; d["agent"] != "a" || d["pinnedRuntimeTarget"] == nil {
				t.Errorf("details %v: want the agent and its pin", d)
			}
		})
	}
}

// TestReachCheckMessages: each refusal names what is wrong.
func TestReachCheckMessages(t *testing.T) {
	docker, kube := tDocker, tKube
	other := func(a *store.Agent) *store.Agent { a.BrokerID = "b2"; return a }
	for _, tc := range []struct {
		in   ReachInput
		want string
	}{
		{ReachInput{Agent: tPinned(api.RuntimeTarget{Type: "podman"})}, `pin is incomplete`},
		{ReachInput{Agent: tPinned(tDocker), BrokerMissing: true, PinnedMissing: true}, `pinned to runtime broker b1, which is no longer registered`},
		{ReachInput{Agent: other(tPinned(tDocker)), Broker: tFlat("b2", &docker)}, `pinned to runtime broker b1 but is assigned to runtime broker b2`},
		{ReachInput{Agent: tPinned(tDocker), Broker: tFlat("b1", nil)}, `no longer serves a single runtime target`},
		{ReachInput{Agent: tPinned(tDocker), Broker: tFlat("b1", &kube)}, `now serves kubernetes:batch/agents; run that broker again serving docker`},
	} {
		if msg := api.AsError(Reach(tc.in)).Message; !strings.Contains(msg, tc.want) {
			t.Errorf("%q does not say %q", msg, tc.want)
		}
	}
}

// TestPlanActionPinned: every action on a pinned agent runs Reach
// (after the authority check, as for a missing broker), and its command
// carries the pin for the broker to check again.
func TestPlanActionPinned(t *testing.T) {
	kube := tKube
	pinned := func(target *api.RuntimeTarget) func(*ActionInput) {
		return func(in *ActionInput) { in.Agent, in.Broker = tPinned(tKube), tFlat("b1", target) }
	}
	for _, v := range tVerbs {
		plan, err := Action(tAction(v, pinned(&kube)))
		if err != nil {
			t.Fatal(v, err)
		}
		run, err := ActionRun(RunInput{Plan: plan, Agent: tPinned(tKube), Broker: tFlat("b1", &kube), Limit: 5})
		if err != nil {
			t.Fatal(v, err)
		}
		if run.Ref.Pin == nil || *run.Ref.Pin != *tPinned(tKube).Pin {
			t.Errorf("%s: command's pin %v, want the agent's", v, run.Ref.Pin)
		}
		_, err = Action(tAction(v, pinned(nil)))
		wantErr(t, err, api.CodeTargetMismatch, http.StatusConflict)
		_, err = Action(tAction(v, pinned(&kube), func(in *ActionInput) { in.Agent.BrokerID, in.Broker = "", nil }))
		wantErr(t, err, api.CodeTargetPinStale, http.StatusConflict)
		_, err = Action(tAction(v, pinned(&kube), func(in *ActionInput) { in.Broker, in.BrokerMissing, in.PinnedMissing = nil, true, true }))
		wantErr(t, err, api.CodeBrokerMissing, http.StatusConflict)
	}
}

// TestPlanDeletePinned: a pinned agent's inconsistent placement refuses
// its delete with or without force, whether or not its broker is online.
func TestPlanDeletePinned(t *testing.T) {
	kube, docker := tKube, tDocker
	for _, force := range []bool{false, true} {
		for _, tc := range []struct {
			name string
			in   DeleteInput
			code string
			want deletePlan
		}{
			{"consistent, online", DeleteInput{Agent: tPinned(tKube), Broker: tFlat("b1", &kube), Online: true}, "", deletePlan{Dispatch: true, Key: "delete:a1"}},
			{"consistent, offline", DeleteInput{Agent: tPinned(tKube), Broker: tFlat("b1", &kube)}, api.CodeBrokerOffline, deletePlan{}},
			{"target changed, online", DeleteInput{Agent: tPinned(tKube), Broker: tFlat("b1", &docker), Online: true}, api.CodeTargetMismatch, deletePlan{}},
			{"no target, online", DeleteInput{Agent: tPinned(tKube), Broker: tFlat("b1", nil), Online: true}, api.CodeTargetMismatch, deletePlan{}},
			{"pinned broker deregistered", DeleteInput{Agent: tPinned(tKube), BrokerMissing: true, PinnedMissing: true}, api.CodeBrokerMissing, deletePlan{}},
			{"another broker, online", DeleteInput{Agent: func() *store.Agent { a := tPinned(tKube); a.BrokerID = "b2"; return a }(), Broker: tFlat("b2", &kube), Online: true}, api.CodeTargetPinStale, deletePlan{}},
			{"no broker", DeleteInput{Agent: func() *store.Agent { a := tPinned(tKube); a.BrokerID = ""; return a }()}, api.CodeTargetPinStale, deletePlan{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.in.Force = force
				got, err := Delete(tc.in)
				if tc.code == "" {
					wantErr(t, err, "", 0)
				} else {
					status := http.StatusConflict
					if tc.code == api.CodeBrokerOffline {
						status = http.StatusServiceUnavailable
					}
					wantErr(t, err, tc.code, status)
				}
				if got != tc.want {
					t.Fatalf("force %v: %+v, want %+v", force, got, tc.want)
				}
			})
		}
	}
}
