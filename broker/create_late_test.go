package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// lateRuntime is the fake runtime with a Create as slow as a loaded
// Docker Engine's, and as deaf to its caller: the container is made after
// delay whether or not the caller still waits (the engine goes on with a
// request whose client went away), and Create returns when either ends.
type lateRuntime struct {
	*fake.Runtime
	delay  time.Duration
	gaveUp atomic.Int32 // Creates whose caller went before the container came
}

func (r *lateRuntime) Create(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	type result struct {
		st  runtime.Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		time.Sleep(r.delay)
		st, err := r.Runtime.Create(context.WithoutCancel(ctx), spec)
		done <- result{st, err}
	}()
	select {
	case res := <-done:
		return res.st, res.err
	case <-ctx.Done():
		r.gaveUp.Add(1)
		return runtime.Status{}, ctx.Err()
	}
}

// TestKeyedCreateOutlivesTheHubsDeadline: the Hub's create times out
// while the engine is slow, and the Hub sends it again with the same key
// at once. The retry is answered with the first create's outcome, the
// agent running, and the engine made one container. The broker used to
// cut the create at the Hub's deadline and undo it while the engine went
// on making the container, so the retry's own create met that container
// and answered "already exists", the agent left without its workspace.
func TestKeyedCreateOutlivesTheHubsDeadline(t *testing.T) {
	hub := newTestHub(t)
	rt := &lateRuntime{Runtime: fake.New(), delay: 600 * time.Millisecond}
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	s := spec("a1")
	s.Start = true
	key := wire.WithKey("create:run-1")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	wantCode(t, hub.current().Call(ctx, wire.MethodAgentCreate, s, nil, key), api.CodeBrokerTimeout)

	var retry wire.AgentStatus
	if err := hub.call(wire.MethodAgentCreate, s, &retry, key); err != nil {
		t.Fatalf("keyed retry of a create that outlived the Hub's deadline: %v", err)
	}
	if retry.AgentID != "a1" || retry.State != runtime.StateRunning {
		t.Fatalf("keyed retry answered %+v, want a1 running", retry)
	}
	// Once more, after the first create ended: the recorded outcome.
	var again wire.AgentStatus
	if err := hub.call(wire.MethodAgentCreate, s, &again, key); err != nil || again.ObservedAt != retry.ObservedAt {
		t.Fatalf("a later retry answered %+v (%v), want the recorded %+v", again, err, retry)
	}
	if n, late := rt.Calls("Create"), rt.gaveUp.Load(); n != 1 || late != 0 {
		t.Fatalf("the engine was asked for %d containers (%d of them after their caller went), want 1 seen through", n, late)
	}
	if st, err := rt.Inspect(t.Context(), "a1"); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("the agent is %+v (%v), want running", st, err)
	}
	if _, err := b.AgentWorkspace("a1"); err != nil {
		t.Fatalf("the agent's workspace record is gone: %v", err)
	}
}
