package broker

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// tokenRuntime is a runtime that delivers agent tokens itself, as the
// Kubernetes one does; it records the order of token deliveries and
// starts.
type tokenRuntime struct {
	*fake.Runtime
	mu    sync.Mutex
	calls []string
	specs []runtime.Spec
}

func (r *tokenRuntime) SetAgentToken(_ context.Context, agentID, token string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "token "+agentID+" "+token)
	return nil
}

func (r *tokenRuntime) Create(ctx context.Context, s runtime.Spec) (runtime.Status, error) {
	r.mu.Lock()
	r.specs = append(r.specs, s)
	r.mu.Unlock()
	return r.Runtime.Create(ctx, s)
}

func (r *tokenRuntime) Start(ctx context.Context, id string) (runtime.Status, error) {
	r.mu.Lock()
	r.calls = append(r.calls, "start "+id)
	r.mu.Unlock()
	return r.Runtime.Start(ctx, id)
}

// TestSecretEnvAndTokenSetter: the runtime is told which variables are
// secrets (the create's Hub secrets and the agent token), and a runtime
// that delivers tokens itself gets the fresh token of a start and a
// restart before the start.
func TestSecretEnvAndTokenSetter(t *testing.T) {
	hub := newTestHub(t)
	rt := &tokenRuntime{Runtime: fake.New()}
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	sp := spec("a1")
	sp.Secrets = map[string]string{"API_KEY": "s3cret"}
	if st := hub.status(wire.MethodAgentCreate, sp); st.State != runtime.StateCreated {
		t.Fatalf("create: %+v", st)
	}
	rt.mu.Lock()
	got := rt.specs[0]
	rt.mu.Unlock()
	if want := []string{"API_KEY", api.EnvAgentToken}; !slices.Equal(got.SecretEnv, want) {
		t.Errorf("SecretEnv = %v, want %v", got.SecretEnv, want)
	}
	if got.Env["API_KEY"] != "s3cret" || got.Env[api.EnvAgentToken] != "tok-a1" {
		t.Errorf("Env lacks the secrets: %v", got.Env)
	}
	hub.status(wire.MethodAgentStart, wire.AgentRef{AgentID: "a1", AgentToken: "fresh-1"})
	hub.status(wire.MethodAgentRestart, wire.AgentRef{AgentID: "a1", AgentToken: "fresh-2", GraceMS: 10})
	rt.mu.Lock()
	defer rt.mu.Unlock()
	want := []string{"token a1 fresh-1", "start a1", "token a1 fresh-2", "start a1"}
	if !slices.Equal(rt.calls, want) {
		t.Errorf("calls = %q, want %q", rt.calls, want)
	}
}
