package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

func spec(agentID string) wire.AgentSpec {
	return wire.AgentSpec{
		AgentID: agentID, Slug: "slug-" + strings.ToLower(agentID), ProjectID: "p1", ProjectName: "proj",
		RunID: "run-1", Harness: "generic", Command: []string{"agent"}, AgentToken: "tok-" + agentID,
		Env: map[string]string{"FOO": "bar", api.EnvAgentID: "spoofed"},
	}
}

func TestHelloCarriesInventory(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	if _, err := rt.Create(t.Context(), runtime.Spec{AgentID: "old", ProjectID: "p1", RunID: "r0"}); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, hub, rt, func(c *Config) {
		c.Profiles = []wire.Profile{{Name: "default", Runtime: "fake", Default: true}}
	})
	hello := recv(t, hub.hellos, "hello")
	if hello.ProtocolVersion != wire.ProtocolVersion || hello.BrokerID != hub.brokerID || hello.Name != "test" ||
		hello.Version != "test" || hello.Runtime != "fake" || len(hello.Profiles) != 1 {
		t.Errorf("hello = %+v", hello)
	}
	if !slices.Contains(hello.Capabilities, wire.CapLogsFollow) {
		t.Errorf("capabilities %v lack %s", hello.Capabilities, wire.CapLogsFollow)
	}
	if len(hello.Inventory) != 1 || hello.Inventory[0].AgentID != "old" || hello.Inventory[0].ProjectID != "p1" ||
		hello.Inventory[0].State != runtime.StateCreated {
		t.Errorf("inventory = %+v", hello.Inventory)
	}
	waitConnected(t, b)
	if s := b.Status(); s.SessionID == "" || s.HubEndpoint != hub.srv.URL || s.LastConnect.IsZero() {
		t.Errorf("status = %+v", s)
	}
}

func TestLifecycleRoundTrip(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	started := make(chan runtime.Spec, 10)
	rt.SetStartOutput(func(s runtime.Spec) string { started <- s; return "hello\n" })
	bin := filepath.Join(t.TempDir(), "bin", "scion")
	b := startBroker(t, hub, rt, func(c *Config) { c.ScionBinary = bin })
	waitConnected(t, b)

	sp := spec("a1")
	sp.SharingMode = api.SharingEmptyPerAgent
	st := hub.status(wire.MethodAgentCreate, sp)
	if st.State != runtime.StateCreated || st.AgentID != "a1" || st.ProjectID != "p1" {
		t.Fatalf("create: %+v", st)
	}
	agentDir := filepath.Join(b.cfg.DataDir, "projects", "p1", "agents", "a1")
	// The agent's directory is the broker user's alone; the workspace is
	// made; the home is left to the runtime that mounts it (this one does
	// not), since the generic harness has no files for it.
	if fi, err := os.Stat(agentDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("agent dir: %v, %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(agentDir, "workspace")); err != nil || !fi.IsDir() {
		t.Fatalf("workspace: %v", err)
	}
	if st := hub.status(wire.MethodAgentStart, wire.AgentRef{AgentID: "a1"}); st.State != runtime.StateRunning {
		t.Fatalf("start: %+v", st)
	}
	// The spec the runtime got: labels, workspace, and the env the scion
	// CLI inside needs, with the broker's values winning over the spec's.
	created := recv(t, started, "the started spec")
	for k, want := range map[string]string{
		runtime.LabelAgentID: "a1", runtime.LabelRunID: "run-1", runtime.LabelBrokerID: hub.brokerID,
		runtime.LabelProjectID: "p1", runtime.LabelSlug: "slug-a1", runtime.LabelSharingMode: api.SharingEmptyPerAgent,
	} {
		if created.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, created.Labels[k], want)
		}
	}
	for k, want := range map[string]string{
		"FOO": "bar", api.EnvHubEndpoint: hub.srv.URL, api.EnvHubURL: hub.srv.URL, api.EnvAgentToken: "tok-a1",
		api.EnvAgentID: "a1", api.EnvProject: "proj",
	} {
		if created.Env[k] != want {
			t.Errorf("env %s = %q, want %q", k, created.Env[k], want)
		}
	}
	if !strings.HasPrefix(created.Env["PATH"], filepath.Dir(bin)+string(os.PathListSeparator)) {
		t.Errorf("PATH %q does not start with the scion binary's directory", created.Env["PATH"])
	}
	if created.WorkDir != filepath.Join(agentDir, "workspace") || created.HomeDir != filepath.Join(agentDir, "home") {
		t.Errorf("dirs: work %s home %s", created.WorkDir, created.HomeDir)
	}

	steps := []struct {
		method string
		want   string
	}{
		{wire.MethodAgentSuspend, runtime.StatePaused},
		{wire.MethodAgentResume, runtime.StateRunning},
		{wire.MethodAgentRestart, runtime.StateRunning},
		{wire.MethodAgentStop, runtime.StateExited},
		{wire.MethodAgentInspect, runtime.StateExited},
	}
	for _, s := range steps {
		if st := hub.status(s.method, wire.AgentRef{AgentID: "a1", GraceMS: 10}); st.State != s.want {
			t.Fatalf("%s: state %s, want %s", s.method, st.State, s.want)
		}
	}
	var inv wire.Inventory
	if err := hub.call(wire.MethodInventory, struct{}{}, &inv); err != nil || len(inv.Agents) != 1 {
		t.Fatalf("inventory: %+v, %v", inv, err)
	}
	var echo wire.Echo
	if err := hub.call(wire.MethodEcho, wire.Echo{Data: []byte("ping")}, &echo); err != nil || string(echo.Data) != "ping" {
		t.Fatalf("echo: %q, %v", echo.Data, err)
	}

	hub.status(wire.MethodAgentDelete, wire.AgentRef{AgentID: "a1"})
	if _, err := os.Stat(agentDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("agent dir still there: %v", err)
	}
	wantCode(t, hub.call(wire.MethodAgentInspect, wire.AgentRef{AgentID: "a1"}, nil), api.CodeAgentNotFound)
	wantCode(t, hub.call(wire.MethodAgentDelete, wire.AgentRef{AgentID: "a1"}, nil), api.CodeAgentNotFound)
	wantCode(t, hub.call(wire.MethodAgentStart, wire.AgentRef{AgentID: "nope"}, nil), api.CodeAgentNotFound)
}

func TestCreateFailureLeavesNothingBehind(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	projects := filepath.Join(b.cfg.DataDir, "projects", "p1", "agents")

	for _, method := range []string{"Create", "Start"} {
		rt.FailNext(method, errors.New("engine on fire"))
		s := spec("a-" + method)
		s.Start = true
		err := hub.call(wire.MethodAgentCreate, s, nil)
		wantCode(t, err, api.CodeRuntimeError)
		if !strings.Contains(err.Error(), "engine on fire") {
			t.Errorf("%s: error %v does not name the cause", method, err)
		}
		if _, err := rt.Inspect(t.Context(), s.AgentID); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("%s failed: container left behind (%v)", method, err)
		}
		if _, err := os.Stat(filepath.Join(projects, s.AgentID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s failed: agent dir left behind (%v)", method, err)
		}
	}
	// A create over an existing agent is refused and does not touch it.
	hub.status(wire.MethodAgentCreate, spec("a1"))
	wantCode(t, hub.call(wire.MethodAgentCreate, spec("a1"), nil), api.CodeAlreadyExists)
	if _, err := os.Stat(filepath.Join(projects, "a1", "workspace")); err != nil {
		t.Errorf("existing agent's dir damaged: %v", err)
	}
	// Harness validation fails before anything is made.
	bad := spec("a2")
	bad.Command = nil
	wantCode(t, hub.call(wire.MethodAgentCreate, bad, nil), api.CodeInvalidRequest)
	if _, err := os.Stat(filepath.Join(projects, "a2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("invalid create left a dir: %v", err)
	}
}

func TestPathEscapingIDsRejected(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	outside := t.TempDir()
	b := startBroker(t, hub, rt, func(c *Config) { c.DataDir = filepath.Join(outside, "data") })
	waitConnected(t, b)
	for _, tc := range []struct{ agent, project string }{
		{"../../escape", "p1"}, {"a/b", "p1"}, {"..", "p1"}, {"", "p1"},
		{"a1", "../.."}, {"a1", "p/q"}, {"a1", ""}, {`a\b`, "p1"},
	} {
		s := spec(tc.agent)
		s.ProjectID = tc.project
		wantCode(t, hub.call(wire.MethodAgentCreate, s, nil), api.CodeInvalidRequest)
	}
	for _, m := range []string{wire.MethodAgentDelete, wire.MethodAgentStop, wire.MethodAgentInspect} {
		wantCode(t, hub.call(m, wire.AgentRef{AgentID: "../data"}, nil), api.CodeInvalidRequest)
	}
	wantCode(t, hub.logsError(wire.LogsRequest{AgentID: "../x"}), api.CodeInvalidRequest)
	if entries, _ := os.ReadDir(outside); len(entries) != 1 || entries[0].Name() != "data" {
		t.Errorf("something was made outside the data dir: %v", entries)
	}
	if inv, _ := rt.Inventory(t.Context()); len(inv) != 0 {
		t.Errorf("runtime has containers: %+v", inv)
	}
}

func TestIdempotentCreateReplay(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	rt.SetLatency("Create", 20*time.Millisecond) // so the duplicates overlap
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)

	var wg sync.WaitGroup
	results := make([]wire.AgentStatus, 4)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() {
			errs[i] = hub.call(wire.MethodAgentCreate, spec("a1"), &results[i], wire.WithKey("create-a1"))
		})
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i].AgentID != "a1" || !reflect.DeepEqual(results[i], results[0]) {
			t.Fatalf("call %d: %+v, %v", i, results[i], errs[i])
		}
	}
	// A replay after completion returns the recorded result, even though
	// the agent has changed since; a create without the key is refused.
	hub.status(wire.MethodAgentStart, wire.AgentRef{AgentID: "a1"})
	var replay wire.AgentStatus
	if err := hub.call(wire.MethodAgentCreate, spec("a1"), &replay, wire.WithKey("create-a1")); err != nil || replay.State != runtime.StateCreated {
		t.Fatalf("replay: %+v, %v", replay, err)
	}
	wantCode(t, hub.call(wire.MethodAgentCreate, spec("a1"), nil), api.CodeAlreadyExists)
	if inv, _ := rt.Inventory(t.Context()); len(inv) != 1 {
		t.Fatalf("inventory has %d containers, want 1", len(inv))
	}
}

// gatedRuntime holds Start calls until released and records how many run
// at once per agent.
type gatedRuntime struct {
	runtime.Runtime
	gate    chan struct{}
	entered chan string

	mu        sync.Mutex
	active    map[string]int
	maxActive map[string]int
}

func (g *gatedRuntime) Start(ctx context.Context, id string) (runtime.Status, error) {
	g.mu.Lock()
	g.active[id]++
	g.maxActive[id] = max(g.maxActive[id], g.active[id])
	g.mu.Unlock()
	g.entered <- id
	<-g.gate
	g.mu.Lock()
	g.active[id]--
	g.mu.Unlock()
	return g.Runtime.Start(ctx, id)
}

func TestPerAgentSerialization(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	for _, id := range []string{"a1", "a2"} {
		if _, err := rt.Create(t.Context(), runtime.Spec{AgentID: id}); err != nil {
			t.Fatal(err)
		}
	}
	g := &gatedRuntime{Runtime: rt, gate: make(chan struct{}), entered: make(chan string, 3),
		active: map[string]int{}, maxActive: map[string]int{}}
	b := startBroker(t, hub, g, nil)
	waitConnected(t, b)

	var wg sync.WaitGroup
	for _, id := range []string{"a1", "a1", "a2"} {
		wg.Go(func() { hub.status(wire.MethodAgentStart, wire.AgentRef{AgentID: id}) })
	}
	// Different agents proceed together: a1 and a2 are both inside Start...
	got := []string{recv(t, g.entered, "a start"), recv(t, g.entered, "another start")}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("entered %v, want a1 and a2", got)
	}
	// ...while the second a1 command waits for the agent's lock.
	wait.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if refs := b.locks.l.Refs("a1"); refs != 2 {
			return fmt.Errorf("a1's lock has %d holders and waiters, want 2 (the second a1 command waiting)", refs)
		}
		return nil
	})
	close(g.gate)
	wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.maxActive["a1"] != 1 || g.maxActive["a2"] != 1 {
		t.Fatalf("max concurrent commands per agent: %v", g.maxActive)
	}
	if n := b.locks.l.Len(); n != 0 {
		t.Errorf("lock table not emptied: %d entries", n)
	}
}

func TestReconnectAfterHubDrops(t *testing.T) {
	hub := newTestHub(t)
	b := startBroker(t, hub, fake.New(), nil)
	waitConnected(t, b)
	first := b.Status().SessionID
	recv(t, hub.hellos, "first hello")

	_ = hub.current().Close("test drops the broker")
	waitStatus(t, b, "reconnect", func(s Status) bool { return s.Connected && s.Reconnects == 1 })
	recv(t, hub.hellos, "second hello")
	if s := b.Status(); s.SessionID == first || s.LastError == "" {
		t.Errorf("status after reconnect: %+v", s)
	}
	hub.status(wire.MethodAgentCreate, spec("a1")) // the new session works
}

func TestRejectedHelloRetried(t *testing.T) {
	hub := newTestHub(t)
	hub.rejectHellos.Store(2)
	b := startBroker(t, hub, fake.New(), nil)
	waitConnected(t, b)
	if n := hub.dials.Load(); n != 3 {
		t.Errorf("dials = %d, want 3 (two refused hellos, then one accepted)", n)
	}
	if s := b.Status(); s.Reconnects != 0 || !strings.Contains(s.LastError, "hello refused") {
		t.Errorf("status = %+v", s)
	}
}

func TestBadCredentialsBackOff(t *testing.T) {
	hub := newTestHub(t)
	b := startBroker(t, hub, fake.New(), func(c *Config) {
		c.Secret = []byte("wrong")
		c.MinBackoff, c.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	})
	// Over half a second a spinning client would dial hundreds of times;
	// the backoff (mean delays 5, 10, 20, 40, then 50 ms) allows about a
	// dozen. The bound leaves room for slow, loaded machines. The window
	// opens at the first dial: a loaded machine may take that long to
	// start the broker at all.
	wait.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if hub.dials.Load() == 0 {
			return errors.New("no dial yet")
		}
		return nil
	})
	window := time.NewTimer(500 * time.Millisecond)
	<-window.C
	n := hub.dials.Load()
	if n < 2 || n > 40 {
		t.Fatalf("%d dials in 500ms, want a handful", n)
	}
	wait.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if d := hub.dials.Load(); d <= n {
			return fmt.Errorf("%d dials, want another attempt after %d", d, n)
		}
		return nil
	})
	s := b.Status()
	if s.Connected || !strings.Contains(s.LastError, "401") || !strings.Contains(s.LastError, api.CodeUnauthorized) {
		t.Errorf("status = %+v", s)
	}
}

func TestLogsStream(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	rt.SetStartOutput(func(runtime.Spec) string { return "" })
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	s := spec("a1")
	s.Start = true
	hub.status(wire.MethodAgentCreate, s)
	big := strings.Repeat("€ uro\n", 20000) // 160 kB, runes straddle chunk edges
	if err := rt.WriteLog("a1", big); err != nil {
		t.Fatal(err)
	}

	read := func(follow bool, after func()) string {
		st, err := hub.current().Stream(t.Context(), wire.MethodAgentLogs, wire.LogsRequest{AgentID: "a1", Follow: follow})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var sb strings.Builder
		for {
			var c wire.LogChunk
			err := st.Recv(&c)
			if errors.Is(err, io.EOF) {
				return sb.String()
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Stream != "stdout" || len(c.Data) > logChunkSize {
				t.Fatalf("chunk stream %q len %d", c.Stream, len(c.Data))
			}
			sb.WriteString(c.Data)
			if sb.Len() == len(big) && after != nil {
				after()
				after = nil
			}
		}
	}
	if got := read(false, nil); got != big {
		t.Fatalf("logs: got %d bytes, want %d (equal: %v)", len(got), len(big), got == big)
	}
	// Following ends when the agent exits, after its last words.
	got := read(true, func() {
		_ = rt.WriteLog("a1", "bye\n")
		_ = rt.SimulateExit("a1", 0)
	})
	if got != big+"bye\n" {
		t.Fatalf("follow: got %d bytes, want %d", len(got), len(big)+4)
	}
	wantCode(t, hub.logsError(wire.LogsRequest{AgentID: "nope"}), api.CodeAgentNotFound)
}

func TestRuntimeEventsForwarded(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	s := spec("a1")
	s.Start = true
	hub.status(wire.MethodAgentCreate, s)
	if err := rt.SimulateExit("a1", 3); err != nil {
		t.Fatal(err)
	}
	st := recv(t, hub.statuses, "agent.status")
	if st.AgentID != "a1" || st.State != runtime.StateExited || st.ExitCode == nil || *st.ExitCode != 3 || st.ProjectID != "p1" {
		t.Fatalf("forwarded status = %+v", st)
	}
}

func TestRunStopsCleanlyAndLeavesAgents(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b, err := New(Config{HubEndpoint: hub.srv.URL, BrokerID: hub.brokerID, Secret: hub.secret, Runtime: rt,
		DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	waitConnected(t, b)
	s := spec("a1")
	s.Start = true
	hub.status(wire.MethodAgentCreate, s)
	conn := hub.current()
	cancel()
	if err := recv(t, done, "Run to return"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	recv(t, conn.Done(), "hub side of the channel to close")
	if st, err := rt.Inspect(t.Context(), "a1"); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("agent after broker stop: %+v, %v", st, err)
	}
	if b.Status().Connected {
		t.Error("still connected after Run returned")
	}
	if err := b.Run(context.Background()); err == nil {
		t.Error("second Run should fail")
	}
}

func TestNewValidates(t *testing.T) {
	ok := Config{HubEndpoint: "https://hub.example", BrokerID: "b", Secret: []byte("s"), Runtime: fake.New(), DataDir: t.TempDir()}
	for name, edit := range map[string]func(*Config){
		"no endpoint": func(c *Config) { c.HubEndpoint = "" },
		"bad scheme":  func(c *Config) { c.HubEndpoint = "ftp://hub" },
		"no id":       func(c *Config) { c.BrokerID = "" },
		"no secret":   func(c *Config) { c.Secret = nil },
		"no runtime":  func(c *Config) { c.Runtime = nil },
		"no data dir": func(c *Config) { c.DataDir = "" },
	} {
		c := ok
		edit(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
	b, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if b.url != "wss://hub.example"+connectPath || b.cfg.MinBackoff != 100*time.Millisecond ||
		b.cfg.MaxBackoff != 10*time.Second || b.cfg.StopGrace != 10*time.Second || b.cfg.Name != "b" {
		t.Errorf("defaults: url %s cfg %+v", b.url, b.cfg)
	}
}

// TestAgentKubernetesSettingsReachTheRuntime: an agent's own Kubernetes
// settings arrive as scion.k8s.<key> spec labels, where the Kubernetes
// runtime reads them (winning over the profile's).
func TestAgentKubernetesSettingsReachTheRuntime(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	s := spec("k1")
	s.Kubernetes = map[string]string{"namespace": "team-a", "safe_to_evict": "false"}
	hub.status(wire.MethodAgentCreate, s)
	st, err := rt.Inspect(t.Context(), "k1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Labels[runtime.LabelKubernetesSetting+"namespace"] != "team-a" || st.Labels[runtime.LabelKubernetesSetting+"safe_to_evict"] != "false" {
		t.Fatalf("labels %v", st.Labels)
	}
}

// checkingRuntime refuses, as the Kubernetes runtime does, an agent's
// own namespace setting in CheckSpec.
type checkingRuntime struct {
	runtime.Runtime
	mu   sync.Mutex
	seen []map[string]string
}

func (c *checkingRuntime) CheckSpec(s runtime.Spec) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, s.Labels)
	if v := s.Labels[runtime.LabelKubernetesSetting+"namespace"]; v != "" {
		return api.BadRequest("kubernetes setting namespace %q is not one an agent may choose", v)
	}
	return nil
}

// TestRuntimeRefusesSettingsBeforeAnythingIsMade: a runtime that checks
// specs (runtime.SpecChecker) sees the agent's settings labels first, and
// its refusal reaches the Hub as it is (invalid_request) with no agent
// directory, workspace or container made.
func TestRuntimeRefusesSettingsBeforeAnythingIsMade(t *testing.T) {
	hub := newTestHub(t)
	rt := &checkingRuntime{Runtime: fake.New()}
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	s := spec("k2")
	s.Kubernetes = map[string]string{"namespace": "kube-system"}
	wantCode(t, hub.call(wire.MethodAgentCreate, s, nil), api.CodeInvalidRequest)
	if _, err := os.Stat(filepath.Join(b.cfg.DataDir, "projects")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused create made %s: %v", filepath.Join(b.cfg.DataDir, "projects"), err)
	}
	if _, err := rt.Inspect(t.Context(), "k2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a refused create made a container: %v", err)
	}
	s.Kubernetes = map[string]string{"safe_to_evict": "false"}
	hub.status(wire.MethodAgentCreate, s)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.seen) != 2 || rt.seen[1][runtime.LabelKubernetesSetting+"safe_to_evict"] != "false" {
		t.Errorf("CheckSpec saw %v", rt.seen)
	}
}

// silentRuntime is a runtime whose events never arrive.
type silentRuntime struct{ runtime.Runtime }

func (silentRuntime) Events() <-chan runtime.Event { return nil }

// A followed log that ends because the agent exited has told the Hub so
// before its end: `scion logs -f` returning means the Hub lists the agent
// as stopped. The runtime here sends no events, so nothing else could.
func TestFollowedLogsEndAfterTheExitIsReported(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	rt.SetStartOutput(func(runtime.Spec) string { return "" })
	b := startBroker(t, hub, silentRuntime{rt}, nil)
	waitConnected(t, b)
	s := spec("a1")
	s.Start = true
	hub.status(wire.MethodAgentCreate, s)
	st, err := hub.current().Stream(t.Context(), wire.MethodAgentLogs, wire.LogsRequest{AgentID: "a1", Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := rt.WriteLog("a1", "bye\n"); err != nil {
		t.Fatal(err)
	}
	var c wire.LogChunk
	if err := st.Recv(&c); err != nil || c.Data != "bye\n" {
		t.Fatalf("first chunk %+v, %v", c, err)
	}
	if err := rt.SimulateExit("a1", 7); err != nil {
		t.Fatal(err)
	}
	if err := st.Recv(&c); !errors.Is(err, io.EOF) {
		t.Fatalf("after the exit: %+v, %v; want the end", c, err)
	}
	select {
	case got := <-hub.statuses:
		if got.AgentID != "a1" || got.State != runtime.StateExited || got.ExitCode == nil || *got.ExitCode != 7 {
			t.Fatalf("reported %+v", got)
		}
	default:
		t.Fatal("the stream ended before the agent's exit was reported")
	}
}
