package broker

import (
	"errors"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// A keyed create that finds the agent of the same run already in the
// runtime (a broker killed after the runtime's Create, before the answer
// was recorded) answers with the agent as it is, started if asked: the
// real outcome. It used to answer 409 already_exists, and the Hub took the
// create for failed while the agent existed.
func TestKeyedCreateRetryAfterCrashResumes(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	ctx := t.Context()
	left := func(id, run string) {
		t.Helper()
		if _, err := rt.Create(ctx, runtime.Spec{AgentID: id, RunID: run, ProjectID: "p1", Command: []string{"agent"}}); err != nil {
			t.Fatal(err)
		}
	}

	left("a1", "run-1")
	s := spec("a1")
	s.Start = true
	var st wire.AgentStatus
	if err := hub.call(wire.MethodAgentCreate, s, &st, wire.WithKey("create:run-1")); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("keyed retry = %+v, %v; want the agent, running", st, err)
	}
	if inv, _ := rt.Inventory(ctx); len(inv) != 1 {
		t.Fatalf("inventory has %d agents, want 1", len(inv))
	}

	// Another run of the same agent ID, or an unkeyed create, is a
	// different create: refused, the agent untouched.
	left("a2", "run-0")
	wantCode(t, hub.call(wire.MethodAgentCreate, spec("a2"), nil, wire.WithKey("create:run-1b")), api.CodeAlreadyExists)
	left("a3", "run-1")
	wantCode(t, hub.call(wire.MethodAgentCreate, spec("a3"), nil), api.CodeAlreadyExists)

	// A resumed create whose start fails fails whole, leaving nothing.
	left("a4", "run-1")
	rt.FailNext("Start", errors.New("engine on fire"))
	s4 := spec("a4")
	s4.Start = true
	wantCode(t, hub.call(wire.MethodAgentCreate, s4, nil, wire.WithKey("create:a4")), api.CodeRuntimeError)
	if _, err := rt.Inspect(ctx, "a4"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("failed resumed create left the agent: %v", err)
	}
}
