package broker

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

var (
	dockerTarget = api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	kubeTarget   = api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "agents"}
)

func TestCheckPin(t *testing.T) {
	pin := func(broker string, target api.RuntimeTarget) *api.PinnedRuntimeTarget {
		return &api.PinnedRuntimeTarget{BrokerID: broker, RuntimeTarget: target}
	}
	for _, c := range []struct {
		name string
		pin  *api.PinnedRuntimeTarget
		own  *api.RuntimeTarget
		ok   bool
	}{
		{"unpinned on a flat instance", nil, &kubeTarget, true},
		{"unpinned on a regular broker", nil, nil, true},
		{"same broker and target", pin("b1", kubeTarget), &kubeTarget, true},
		{"same docker target", pin("b1", dockerTarget), &dockerTarget, true},
		{"another broker", pin("b2", kubeTarget), &kubeTarget, false},
		{"another type", pin("b1", dockerTarget), &kubeTarget, false},
		{"another context", pin("b1", api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "other", Namespace: "agents"}), &kubeTarget, false},
		{"another namespace", pin("b1", api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "default"}), &kubeTarget, false},
		{"pinned on a regular broker", pin("b1", kubeTarget), nil, false},
	} {
		err := checkPin(c.pin, "b1", c.own)
		if c.ok && err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		if !c.ok && !api.IsCode(err, api.CodeTargetMismatch) {
			t.Errorf("%s: err = %v, want %s", c.name, err, api.CodeTargetMismatch)
		}
	}
}

func TestWithRegistry(t *testing.T) {
	for _, c := range []struct{ registry, image, want string }{
		{"", "scion-claude:latest", "scion-claude:latest"},
		{"registry.example/team", "scion-claude:latest", "registry.example/team/scion-claude:latest"},
		{"registry.example/team/", "library/alpine", "registry.example/team/library/alpine"},
		{"registry.example", "ghcr.io/x/y:1", "ghcr.io/x/y:1"},
		{"registry.example", "localhost/y", "localhost/y"},
		{"registry.example", "host:5000/y", "host:5000/y"},
		// Docker reads a first element with capitals as a host too.
		{"registry.example", "MyHost/y", "MyHost/y"},
		{"registry.example", "y@sha256:" + strings.Repeat("a", 64), "registry.example/y@sha256:" + strings.Repeat("a", 64)},
		{"registry.example", "", ""},
	} {
		if got := withRegistry(c.registry, c.image); got != c.want {
			t.Errorf("withRegistry(%q, %q) = %q, want %q", c.registry, c.image, got, c.want)
		}
	}
}

func TestRefusedDelay(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999, -1, 1} {
		if d := refusedDelay(30*time.Second, r); d < 15*time.Second || d >= 30*time.Second {
			t.Errorf("refusedDelay(30s, %v) = %v, want in [15s, 30s)", r, d)
		}
	}
}

func flat(target api.RuntimeTarget) func(*Config) {
	return func(c *Config) { c.RuntimeTarget, c.InstanceKey = &target, "k8s-batch" }
}

// A flat instance's hello reports its target and no profiles; New refuses
// profiles or an incomplete target on one, and instance settings on a
// regular broker.
func TestFlatHelloCarriesTargetAndNoProfiles(t *testing.T) {
	hub := newTestHub(t)
	b := startBroker(t, hub, fake.New(), flat(kubeTarget))
	hello := recv(t, hub.hellos, "hello")
	if hello.RuntimeTarget == nil || *hello.RuntimeTarget != kubeTarget || len(hello.Profiles) != 0 {
		t.Errorf("hello target %v profiles %v", hello.RuntimeTarget, hello.Profiles)
	}
	waitConnected(t, b)

	ok := Config{HubEndpoint: "https://hub.example", BrokerID: "b", Secret: []byte("s"), Runtime: fake.New(), DataDir: t.TempDir()}
	for name, edit := range map[string]func(*Config){
		"profiles on a flat instance": func(c *Config) {
			c.RuntimeTarget = &dockerTarget
			c.Profiles = []wire.Profile{{Name: "default", Runtime: "fake", Default: true}}
		},
		"incomplete target": func(c *Config) {
			c.RuntimeTarget = &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch"}
		},
		"agent defaults on a regular broker": func(c *Config) { c.AgentDefaults.Memory = "1g" },
	} {
		c := ok
		edit(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// A command pinned to another broker or target is refused with 409
// runtime_target_mismatch and reaches nothing: no container, no runtime
// call, no recorded answer for its key (the same key with the right pin
// then works).
func TestPinMismatchRefusedBeforeTheRuntime(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, flat(kubeTarget))
	waitConnected(t, b)
	good := &api.PinnedRuntimeTarget{BrokerID: hub.brokerID, RuntimeTarget: kubeTarget}
	for name, pin := range map[string]*api.PinnedRuntimeTarget{
		"other broker": {BrokerID: "broker-2", RuntimeTarget: kubeTarget},
		"other target": {BrokerID: hub.brokerID, RuntimeTarget: api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "default"}},
	} {
		s := spec("a1")
		s.Pin = pin
		err := hub.call(wire.MethodAgentCreate, s, nil, wire.WithKey("create-a1"))
		wantCode(t, err, api.CodeTargetMismatch)
		if n := rt.Calls("Create"); n != 0 {
			t.Fatalf("%s: the runtime saw %d creates", name, n)
		}
	}
	s := spec("a1")
	s.Pin = good
	if err := hub.call(wire.MethodAgentCreate, s, nil, wire.WithKey("create-a1")); err != nil {
		t.Fatalf("create with its own pin under the refused key: %v", err)
	}
	for method, op := range map[string]string{wire.MethodAgentStart: "Start", wire.MethodAgentStop: "Stop", wire.MethodAgentRestart: "Stop",
		wire.MethodAgentSuspend: "Suspend", wire.MethodAgentResume: "Resume", wire.MethodAgentDelete: "Delete", wire.MethodAgentInspect: ""} {
		before := 0
		if op != "" {
			before = rt.Calls(op)
		}
		err := hub.call(method, wire.AgentRef{AgentID: "a1", Pin: &api.PinnedRuntimeTarget{BrokerID: hub.brokerID, RuntimeTarget: dockerTarget}}, nil)
		wantCode(t, err, api.CodeTargetMismatch)
		if op != "" && rt.Calls(op) != before {
			t.Errorf("%s: the runtime's %s was called", method, op)
		}
	}
	if st, err := rt.Inspect(t.Context(), "a1"); err != nil || st.State != runtime.StateCreated {
		t.Fatalf("the agent after refused commands: %+v, %v", st, err)
	}
	if st := hub.status(wire.MethodAgentStart, wire.AgentRef{AgentID: "a1", Pin: good}); st.State != runtime.StateRunning {
		t.Errorf("start with its own pin: %+v", st)
	}
}

// A regular broker refuses a pinned command: it serves no single target.
func TestPinnedCommandOnRegularBrokerRefused(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	s := spec("a1")
	s.Pin = &api.PinnedRuntimeTarget{BrokerID: hub.brokerID, RuntimeTarget: dockerTarget}
	wantCode(t, hub.call(wire.MethodAgentCreate, s, nil), api.CodeTargetMismatch)
	if n := rt.Calls("Create"); n != 0 {
		t.Fatalf("the runtime saw %d creates", n)
	}
}

// A flat instance refuses a create naming a profile (it has none) and one
// lacking a required secret, before anything is made; its agent_defaults
// give the resource labels a profile gave and prefix the harness's
// default image with the registry, while an image the create names wins.
func TestFlatCreateChecksAndAgentDefaults(t *testing.T) {
	hub := newTestHub(t)
	rt := &imageRuntime{Runtime: fake.New(), images: map[string]string{}}
	b := startBroker(t, hub, rt, func(c *Config) {
		flat(dockerTarget)(c)
		c.AgentDefaults = AgentDefaults{Memory: "2g", CPUs: "1.5", ImageRegistry: "registry.example/team", RequiredSecrets: []string{"ANTHROPIC_API_KEY"},
			Harness: map[string]HarnessDefaults{"gemini": {Image: "gemini-custom:2", Memory: "8g"}}}
	})
	waitConnected(t, b)
	s := spec("p1")
	s.Profile = "default"
	s.Secrets = map[string]string{"ANTHROPIC_API_KEY": "k"}
	wantCode(t, hub.call(wire.MethodAgentCreate, s, nil), api.CodeProfileNotAvailable)
	s = spec("s1")
	err := hub.call(wire.MethodAgentCreate, s, nil)
	wantCode(t, err, api.CodeInvalidRequest)
	if !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("refusal %q does not name the secret", err)
	}
	if n := rt.Calls("Create"); n != 0 {
		t.Fatalf("the runtime saw %d creates", n)
	}

	s = spec("c1")
	s.Harness, s.Command = "claude", nil
	s.Secrets = map[string]string{"ANTHROPIC_API_KEY": "k"}
	hub.status(wire.MethodAgentCreate, s)
	st, err := rt.Inspect(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Labels["scion.memory"] != "2g" || st.Labels["scion.cpus"] != "1.5" {
		t.Errorf("labels %v lack the instance's resources", st.Labels)
	}
	s = spec("c2")
	s.Harness, s.Command, s.Image = "claude", nil, "mine:1"
	s.Secrets = map[string]string{"ANTHROPIC_API_KEY": "k"}
	hub.status(wire.MethodAgentCreate, s)
	s = spec("g1")
	s.Harness, s.Command = "gemini", nil
	s.Secrets = map[string]string{"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "g"}
	hub.status(wire.MethodAgentCreate, s)
	if st, err := rt.Inspect(t.Context(), "g1"); err != nil || st.Labels["scion.memory"] != "8g" || st.Labels["scion.cpus"] != "1.5" {
		t.Errorf("gemini's override: labels %v, %v", st.Labels, err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.images["c1"] != "registry.example/team/scion-claude:latest" || rt.images["c2"] != "mine:1" || rt.images["g1"] != "registry.example/team/gemini-custom:2" {
		t.Errorf("images %v", rt.images)
	}
}

// A flat instance's clone depth is that of its clone-per-agent clones.
func TestFlatCloneDepth(t *testing.T) {
	repo := gitrepo.New(t) // two commits
	for i := range 3 {
		repo.Commit(t, fmt.Sprintf("f%d", i), "x\n")
	}
	dataDir := t.TempDir()
	b, err := New(Config{HubEndpoint: "https://hub.example", BrokerID: "b", Secret: []byte("s"), Runtime: fake.New(), DataDir: dataDir,
		RuntimeTarget: &dockerTarget, AgentDefaults: AgentDefaults{CloneDepth: 3},
		GitWorkspaces: workspace.GitConfig{Env: gitrepo.IsolatedEnv, LocalRemoteRoots: gitrepo.LocalRoots}})
	if err != nil {
		t.Fatal(err)
	}
	spec := wire.AgentSpec{AgentID: "a1", Slug: "s-a1", ProjectID: "p1", ProjectName: "web", SharingMode: api.SharingClonePerAgent, GitRemote: repo.URL}
	if err := os.MkdirAll(workspace.Layout{Root: dataDir}.AgentDir("p1", "a1"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := b.ws.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitrepo.Git(t, dir, "rev-list", "--count", "HEAD"); got != "3" {
		t.Errorf("the clone has %s commits of the remote's 5, want the flat depth 3", got)
	}
}

// syncBuffer is a log sink safe for the broker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A Hub that refuses a flat instance's hello (the experiment is off) does
// not stop it: the instance logs that it is not activated once, not at
// every attempt, asks again slowly, and is activated as soon as the Hub
// accepts it.
func TestFlatInstanceNotActivatedThenActivated(t *testing.T) {
	hub := newTestHub(t)
	hub.refuseWith.Store(api.Conflict(api.CodeExperimentDisabled, "flat Runtime Brokers are off"))
	var logs syncBuffer
	b := startBroker(t, hub, fake.New(), func(c *Config) {
		flat(kubeTarget)(c)
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.RefusedBackoff = 40 * time.Millisecond
	})
	for range 3 {
		recv(t, hub.hellos, "refused hello")
	}
	waitStatus(t, b, "refused", func(s Status) bool { return s.Refused != "" })
	if s := b.Status(); s.Connected || s.Refused != "experiment_disabled: flat Runtime Brokers are off" {
		t.Errorf("status = %+v", s)
	}
	want := "instance k8s-batch not activated: experiment_disabled: flat Runtime Brokers are off"
	if n := strings.Count(logs.String(), want); n != 1 {
		t.Errorf("%q logged %d times, want once:\n%s", want, n, logs.String())
	}

	hub.refuseWith.Store(nil)
	go func() { // keep the test hub's hello channel from filling
		for range hub.hellos {
		}
	}()
	waitConnected(t, b)
	if s := b.Status(); s.Refused != "" {
		t.Errorf("status after activation = %+v", s)
	}
	wait.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), "instance k8s-batch activated") {
			return fmt.Errorf("no activation logged")
		}
		return nil
	})
}

// A rejected upgrade (revoked credentials) is a refusal too.
func TestFlatInstanceRefusedChannel(t *testing.T) {
	hub := newTestHub(t)
	var logs syncBuffer
	b := startBroker(t, hub, fake.New(), func(c *Config) {
		flat(dockerTarget)(c)
		c.Secret = []byte("wrong")
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.RefusedBackoff = 40 * time.Millisecond
	})
	waitStatus(t, b, "refused", func(s Status) bool { return strings.HasPrefix(s.Refused, api.CodeUnauthorized+": ") })
	wait.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		if n := hub.dials.Load(); n < 3 {
			return fmt.Errorf("%d dials", n)
		}
		return nil
	})
	if n := strings.Count(logs.String(), "instance k8s-batch not activated: unauthorized: invalid broker credentials"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
}
