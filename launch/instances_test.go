package launch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/fake"
)

func TestSplitPortRange(t *testing.T) {
	for _, c := range []struct {
		r    [2]int
		n    int
		want [][2]int
	}{
		{[2]int{31000, 31999}, 1, [][2]int{{31000, 31999}}},
		{[2]int{31000, 31999}, 2, [][2]int{{31000, 31499}, {31500, 31999}}},
		{[2]int{31000, 31999}, 3, [][2]int{{31000, 31332}, {31333, 31665}, {31666, 31998}}},
		{[2]int{100, 101}, 2, [][2]int{{100, 100}, {101, 101}}},
		{[2]int{100, 101}, 3, nil},
		{[2]int{100, 200}, 0, nil},
	} {
		got, err := splitPortRange(c.r, c.n)
		if c.want == nil {
			if err == nil {
				t.Errorf("split %v in %d: %v, want an error", c.r, c.n, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("split %v in %d = %v, %v; want %v", c.r, c.n, got, err, c.want)
		}
	}
}

func TestInstanceAgentDefaults(t *testing.T) {
	depth := 5
	got, err := agentDefaults(config.AgentDefaults{ImageRegistry: "registry.example/agents", RequiredSecrets: []string{"A"},
		CloneDepth: &depth, Resources: &config.Resources{Memory: "4Gi", CPUs: "500m"}, HarnessConfig: "ignored"})
	want := broker.AgentDefaults{Memory: "4294967296", CPUs: "0.5", ImageRegistry: "registry.example/agents", RequiredSecrets: []string{"A"}, CloneDepth: 5}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("agentDefaults = %+v, %v; want %+v", got, err, want)
	}
	got, err = agentDefaults(config.AgentDefaults{Resources: &config.Resources{CPUs: "1.5", Memory: "512Mi"},
		HarnessOverrides: map[string]config.HarnessOverride{
			"claude": {Image: "claude-x:1", Resources: &config.Resources{Memory: "1Gi"}},
			"gemini": {HarnessConfig: "not applied"},
		}})
	want = broker.AgentDefaults{CPUs: "1.5", Memory: "536870912", Harness: map[string]broker.HarnessDefaults{"claude": {Image: "claude-x:1", Memory: "1073741824"}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("agentDefaults = %+v, %v; want %+v", got, err, want)
	}
}

// Resources that parse as quantities but that no agent could run under
// (512m is 0.512 bytes; 100u CPUs round to 0) are refused naming the
// field, not turned into a 1-byte or a 0-CPU limit.
func TestInstanceAgentDefaultsUnusableResources(t *testing.T) {
	for _, c := range []struct {
		d    config.AgentDefaults
		want string
	}{
		{config.AgentDefaults{Resources: &config.Resources{Memory: "512m"}}, `agent_defaults.resources.memory "512m"`},
		{config.AgentDefaults{Resources: &config.Resources{CPUs: "100u"}}, `agent_defaults.resources.cpus "100u"`},
		{config.AgentDefaults{HarnessOverrides: map[string]config.HarnessOverride{"claude": {Resources: &config.Resources{Memory: "1k"}}}},
			`agent_defaults.harness_overrides.claude.resources.memory "1k"`},
	} {
		got, err := agentDefaults(c.d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("agentDefaults(%+v) = %+v, %v; want an error naming %s", c.d, got, err, c.want)
		}
	}
}

// A Kubernetes instance's runtime_target is the one profile its agents
// get (over server.broker.kubernetes.defaults), with the resolved
// context and namespace; an agent may not name another context or
// namespace, whatever the broker lists for its regular profiles.
func TestInstanceKubernetesOptions(t *testing.T) {
	safe := false
	bs := config.BrokerSettings{Extra: map[string]any{"kubernetes": map[string]any{
		"kubeconfig": "/k/config", "defaults": map[string]any{"shared_dir_size": "5Gi", "priority_class": "low"},
		"agent_contexts": []any{"other"}, "agent_namespaces": []any{"elsewhere"}, "agent_service_accounts": []any{"sa"},
	}}}
	in := config.Instance{Key: "k8s-batch", Name: "k8s-batch", RuntimeTarget: config.RuntimeTargetSettings{
		Type: api.RuntimeTargetKubernetes, SharedDirSize: "40Gi", SafeToEvict: &safe}}
	target := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "current", Namespace: "default"}
	opts, err := instanceKubernetesOptions(bs, in, target, "b-1")
	if err != nil {
		t.Fatal(err)
	}
	p := opts.Profiles["k8s-batch"]
	if opts.DefaultProfile != "k8s-batch" || len(opts.Profiles) != 1 || p.Context != "current" || p.Namespace != "default" ||
		p.SharedDirSize != "40Gi" || p.SafeToEvict == nil || *p.SafeToEvict || p.PriorityClass != "" {
		t.Errorf("profile %+v (default %q)", p, opts.DefaultProfile)
	}
	if opts.Defaults.SharedDirSize != "5Gi" || opts.Defaults.PriorityClass != "low" || opts.Kubeconfig != "/k/config" || opts.BrokerID != "b-1" {
		t.Errorf("options %+v", opts)
	}
	if len(opts.AgentChoices.Contexts) != 0 || len(opts.AgentChoices.Namespaces) != 0 || !reflect.DeepEqual(opts.AgentChoices.ServiceAccounts, []string{"sa"}) {
		t.Errorf("agent choices %+v", opts.AgentChoices)
	}
	if opts.CheckTimeout <= 0 || opts.CheckTimeout > 10*time.Second {
		t.Errorf("check timeout %v", opts.CheckTimeout)
	}
}

// logBuffer collects log lines from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// deadKubeconfig writes a kubeconfig whose context "dead" names an API
// server nothing listens on.
func deadKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	doc := `apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: x}
contexts:
- name: dead
  context: {cluster: dead, user: u}
current-context: dead
`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeDocker makes every Docker instance run on a fake runtime (the
// Kubernetes ones stay real), and returns the runtimes by broker ID.
func fakeDocker(t *testing.T) *sync.Map {
	t.Helper()
	var rts sync.Map
	old := instanceRuntimeFor
	instanceRuntimeFor = func(ctx context.Context, h *instanceHost, in config.Instance, target api.RuntimeTarget, brokerID, dir string) (instanceRuntime, error) {
		if target.Type != api.RuntimeTargetDocker {
			return old(ctx, h, in, target, brokerID, dir)
		}
		v, _ := rts.LoadOrStore(brokerID, fake.New())
		return instanceRuntime{rt: v.(*fake.Runtime).Restart()}, nil
	}
	t.Cleanup(func() { instanceRuntimeFor = old })
	return &rts
}

// registerFlat registers a flat instance on the test Hub and saves its
// credentials as `scion runtime-broker register --instance` does.
func registerFlat(t *testing.T, e *testenv.Env, key string, target api.RuntimeTarget) string {
	t.Helper()
	bc, err := e.Hub.RegisterFlatBroker(context.Background(), key, hub.BootstrapAdminID, true, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		t.Fatal(err)
	}
	registered := config.RuntimeTarget(target)
	creds.Put(&config.BrokerConnection{Name: key, Instance: key, RuntimeTarget: &registered, HubEndpoint: e.URL,
		BrokerID: bc.BrokerID, BrokerName: bc.Name, Secret: bc.Secret})
	if err := creds.Save(); err != nil {
		t.Fatal(err)
	}
	return bc.BrokerID
}

func turnOnFlatBrokers(t *testing.T, e *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	s, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true}
	if _, err := e.Admin.PutSettings(ctx, *s); err != nil {
		t.Fatal(err)
	}
}

func writeSettings(t *testing.T, doc string) *config.Settings {
	t.Helper()
	if err := os.WriteFile(config.SettingsPath(), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return loadSettings(t)
}

// runInstancesFor runs brokerInstances until the test stops it.
func runInstancesFor(t *testing.T, s *config.Settings, log *slog.Logger) (stop func() error) {
	t.Helper()
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- brokerInstances(ctx, s, creds, config.BrokerOptions{Version: "test"}, log) }()
	var once sync.Once
	var rerr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case rerr = <-done:
			case <-time.After(20 * time.Second):
				rerr = fmt.Errorf("brokerInstances did not return")
			}
		})
		return rerr
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func brokerOnline(e *testenv.Env, id string, target api.RuntimeTarget) error {
	bs, err := e.Admin.ListAllBrokers(context.Background())
	if err != nil {
		return err
	}
	for _, b := range bs {
		if b.ID == id {
			if b.Status != api.BrokerOnline {
				return fmt.Errorf("broker %s is %s", b.Name, b.Status)
			}
			if b.RuntimeTarget == nil || *b.RuntimeTarget != target || len(b.Profiles) != 0 {
				return fmt.Errorf("broker %s: target %v, profiles %v", b.Name, b.RuntimeTarget, b.Profiles)
			}
			return nil
		}
	}
	return fmt.Errorf("no broker %s", id)
}

// One process with three instances: a Docker one (on the fake runtime)
// serves; a Kubernetes one whose API server does not answer and one with
// no saved credentials are refused and reported by key and reason while
// the first runs. A restart of the process keeps the instance's broker ID.
func TestBrokerInstancesTheGoodOneServes(t *testing.T) {
	setHome(t)
	fakeDocker(t)
	e := testenv.New(t, testenv.Options{})
	turnOnFlatBrokers(t, e)
	docker := api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	dead := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "dead", Namespace: "agents"}
	dockerID := registerFlat(t, e, "local-docker", docker)
	registerFlat(t, e, "k8s-dead", dead)
	// Registered serving dead/agents, its entry now says dead/moved.
	registerFlat(t, e, "k8s-moved", api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "dead", Namespace: "agents-old"})
	s := writeSettings(t, `server:
  broker:
    hub_endpoint: `+e.URL+`
    kubernetes:
      kubeconfig: `+deadKubeconfig(t)+`
    instances:
      - key: local-docker
        name: local-docker
        runtime_target: {type: docker}
      - key: k8s-dead
        name: k8s-dead
        runtime_target: {type: kubernetes, namespace: agents}
      - key: k8s-unregistered
        name: k8s-unregistered
        runtime_target: {type: kubernetes, context: dead, namespace: other}
      - key: k8s-moved
        name: k8s-moved
        runtime_target: {type: kubernetes, context: dead, namespace: moved}
`)
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	stop := runInstancesFor(t, s, log)
	wait.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error { return brokerOnline(e, dockerID, docker) })
	wait.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		out := logs.String()
		for _, want := range []string{
			"instance k8s-dead refused: kubernetes runtime: API server https://127.0.0.1:1", "does not answer",
			"instance k8s-unregistered refused: no saved credentials for Hub " + e.URL + ": run scion runtime-broker register --instance k8s-unregistered",
			"instance k8s-moved refused: it registered serving kubernetes:dead/agents-old but its runtime_target now resolves to kubernetes:dead/moved",
		} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("the log lacks %q:\n%s", want, out)
			}
		}
		return nil
	})
	if err := stop(); err != nil {
		t.Fatalf("brokerInstances: %v", err)
	}
	e.WaitBrokerStatus(dockerID, api.BrokerOffline)

	// The same process again: the same broker ID comes back online.
	runInstancesFor(t, s, log)
	wait.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error { return brokerOnline(e, dockerID, docker) })
	if _, err := os.Stat(filepath.Join(config.Path("broker"), "instances", "local-docker")); err != nil {
		t.Errorf("the instance's data directory: %v", err)
	}
}

// An instance whose runtime hangs while it is built (a Docker engine that
// answers the ping but not the calls after it) does not keep the others
// from serving, whichever comes first in the list; the process still
// stops cleanly, and an instance that serves makes it exit 0.
func TestBrokerInstancesAStuckInstanceDoesNotHoldTheOthers(t *testing.T) {
	setHome(t)
	e := testenv.New(t, testenv.Options{})
	turnOnFlatBrokers(t, e)
	kube := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "c", Namespace: "agents"}
	other := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "c", Namespace: "later"}
	registerFlat(t, e, "stuck-docker", api.RuntimeTarget{Type: api.RuntimeTargetDocker})
	kubeID := registerFlat(t, e, "k8s", kube)
	laterID := registerFlat(t, e, "k8s-later", other)
	old := instanceRuntimeFor
	instanceRuntimeFor = func(ctx context.Context, h *instanceHost, in config.Instance, target api.RuntimeTarget, brokerID, dir string) (instanceRuntime, error) {
		if target.Type == api.RuntimeTargetDocker {
			<-ctx.Done() // the engine never answers
			return instanceRuntime{}, ctx.Err()
		}
		return instanceRuntime{rt: fake.New()}, nil
	}
	t.Cleanup(func() { instanceRuntimeFor = old })
	s := writeSettings(t, `server:
  broker:
    hub_endpoint: `+e.URL+`
    instances:
      - {key: k8s, name: k8s, runtime_target: {type: kubernetes, context: c, namespace: agents}}
      - {key: stuck-docker, name: stuck-docker, runtime_target: {type: docker}}
      - {key: k8s-later, name: k8s-later, runtime_target: {type: kubernetes, context: c, namespace: later}}
`)
	stop := runInstancesFor(t, s, slog.New(slog.DiscardHandler))
	wait.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if err := brokerOnline(e, kubeID, kube); err != nil {
			return err
		}
		return brokerOnline(e, laterID, other)
	})
	if err := stop(); err != nil {
		t.Fatalf("brokerInstances: %v", err)
	}
}

// With no instance able to serve, the process does not start, naming each
// instance and its reason.
func TestBrokerInstancesNoneCanServe(t *testing.T) {
	setHome(t)
	s := writeSettings(t, `server:
  broker:
    hub_endpoint: http://127.0.0.1:1
    instances:
      - key: local-docker
        name: local-docker
        runtime_target: {type: docker}
`)
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		t.Fatal(err)
	}
	err = brokerInstances(t.Context(), s, creds, config.BrokerOptions{}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "local-docker: no saved credentials") {
		t.Fatalf("err = %v", err)
	}
}

// An entry that does not validate refuses the start of
// `scion runtime-broker start`, naming the entry and the field; nothing
// is dialled.
func TestBrokerInstancesInvalidEntryRefusesStart(t *testing.T) {
	for name, c := range map[string]struct{ entries, want string }{
		"duplicate key": {`
      - {key: a, name: a, runtime_target: {type: docker}}
      - {key: a, name: b, runtime_target: {type: kubernetes, context: c}}`, `server.broker.instances[1] (key "a"): key "a"`},
		"unknown type": {`
      - {key: a, name: a, runtime_target: {type: podman}}`, `server.broker.instances[0] (key "a"): runtime_target.type "podman"`},
		"two targets": {`
      - {key: a, name: a, runtime_target: [{type: docker}, {type: kubernetes}]}`, `server.broker.instances[0] (key "a"): runtime_target`},
	} {
		t.Run(name, func(t *testing.T) {
			setHome(t)
			writeSettings(t, "server:\n  broker:\n    hub_endpoint: http://127.0.0.1:1\n    instances:"+c.entries+"\n")
			err := Broker(t.Context(), config.BrokerOptions{LogLevel: "error"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to name %s", err, c.want)
			}
		})
	}
}

// --runtime with instances is refused, not ignored: each instance's
// runtime is its runtime_target's.
func TestBrokerInstancesRefuseRuntimeFlag(t *testing.T) {
	setHome(t)
	writeSettings(t, "server:\n  broker:\n    hub_endpoint: http://127.0.0.1:1\n    instances:\n      - {key: a, name: a, runtime_target: {type: docker}}\n")
	err := Broker(t.Context(), config.BrokerOptions{LogLevel: "error", Runtime: "process"})
	if err == nil || !strings.Contains(err.Error(), "--runtime process does not apply with server.broker.instances") {
		t.Fatalf("err = %v", err)
	}
}

// A workstation with instances registers them through its own Hub
// instead of the "local" broker. While the Hub refuses them (the
// experiment is off) the Hub runs and the instance is logged as not
// activated; turning the experiment on activates it without a restart.
func TestWorkstationInstancesActivateWhenTheExperimentIsTurnedOn(t *testing.T) {
	setHome(t)
	fakeDocker(t)
	oldRetry, oldOut := registerRetry, logOutput
	var logs logBuffer
	registerRetry, logOutput = 100*time.Millisecond, &logs
	t.Cleanup(func() { registerRetry, logOutput = oldRetry, oldOut })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	writeSettings(t, `server:
  hub:
    listen: `+addr+`
  broker:
    instances:
      - key: local-docker
        name: local-docker
        runtime_target: {type: docker}
`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Server(ctx, config.ServerOptions{Workstation: true, LogLevel: "info", Limits: config.DefaultServeLimits(), AgentTokenTTL: time.Hour})
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("the Hub did not stop")
		}
	}()
	var ws *config.Workstation
	wait.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("the workstation ended: %v\n%s", err, logs.String())
		default:
		}
		if ws, err = config.LoadWorkstation(); err != nil || ws == nil {
			return fmt.Errorf("no workstation file (%v)", err)
		}
		return nil
	})
	if ws.BrokerID != "" {
		t.Errorf("the workstation file names local broker %s", ws.BrokerID)
	}
	cl := client.New(ws.URL, ws.AdminToken)
	wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), "instance local-docker not activated: experiment_disabled: ") {
			return fmt.Errorf("not logged as not activated:\n%s", logs.String())
		}
		return nil
	})
	if bs, err := cl.ListAllBrokers(ctx); err != nil || len(bs) != 0 {
		t.Fatalf("brokers while the experiment is off: %v, %v", bs, err)
	}
	if n := strings.Count(logs.String(), "instance local-docker not activated"); n != 1 {
		t.Errorf("not activated logged %d times, want once", n)
	}

	s, err := cl.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true}
	if _, err := cl.PutSettings(ctx, *s); err != nil {
		t.Fatal(err)
	}
	var id string
	wait.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		bs, err := cl.ListAllBrokers(ctx)
		if err != nil || len(bs) != 1 {
			return fmt.Errorf("brokers %v, %v", bs, err)
		}
		b := bs[0]
		if b.Name != "local-docker" || b.Status != api.BrokerOnline || b.RuntimeTarget == nil || b.RuntimeTarget.Type != api.RuntimeTargetDocker {
			return fmt.Errorf("broker %+v", b)
		}
		id = b.ID
		return nil
	})
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if c := creds.ForInstance(ws.URL, "local-docker"); c == nil || c.BrokerID != id {
		t.Errorf("saved credentials %+v, want broker %s", c, id)
	}
	if !strings.Contains(logs.String(), "instance local-docker activated") {
		t.Errorf("activation not logged:\n%s", logs.String())
	}
}

// The target an instance reports is resolved: a Kubernetes entry without a
// context takes the kubeconfig's current one, without a namespace
// "default"; with no current context it stays incomplete (the instance is
// then refused, naming runtime_target.context).
func TestParseInstancesResolvesTargets(t *testing.T) {
	setHome(t)
	s := writeSettings(t, `server:
  broker:
    kubernetes:
      kubeconfig: `+deadKubeconfig(t)+`
    instances:
      - {key: d, name: d, runtime_target: {type: docker}}
      - {key: k, name: k, runtime_target: {type: kubernetes}}
      - {key: n, name: n, runtime_target: {type: kubernetes, context: other, namespace: agents}}
`)
	_, targets, err := parseInstances(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.RuntimeTarget{{Type: api.RuntimeTargetDocker},
		{Type: api.RuntimeTargetKubernetes, Context: "dead", Namespace: "default"},
		{Type: api.RuntimeTargetKubernetes, Context: "other", Namespace: "agents"}}
	if !reflect.DeepEqual(targets, want) {
		t.Errorf("targets %v, want %v", targets, want)
	}

	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = writeSettings(t, "server:\n  broker:\n    kubernetes:\n      kubeconfig: "+empty+"\n    instances:\n      - {key: k, name: k, runtime_target: {type: kubernetes}}\n")
	_, targets, err = parseInstances(s)
	if err != nil || len(targets) != 1 || targets[0].Complete() {
		t.Fatalf("targets %v, %v", targets, err)
	}
	h := &instanceHost{settings: s, hub: "http://hub", log: slog.New(slog.DiscardHandler), runtime: instanceRuntimeFor}
	_, err = h.prepareOne(t.Context(), config.Instance{Key: "k", Name: "k"}, targets[0], &config.BrokerConnection{BrokerID: "b"}, [2]int{1, 2})
	if err == nil || !strings.Contains(err.Error(), "set runtime_target.context") {
		t.Errorf("err = %v", err)
	}

	// A kubeconfig that cannot be read is the reason given, not "names
	// no current context" (as register --instance says it).
	broken := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(broken, []byte("clusters: {not: [a list"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = writeSettings(t, "server:\n  broker:\n    kubernetes:\n      kubeconfig: "+broken+"\n    instances:\n      - {key: k, name: k, runtime_target: {type: kubernetes}}\n")
	if _, targets, err = parseInstances(s); err != nil || len(targets) != 1 || targets[0].Complete() {
		t.Fatalf("targets %v, %v", targets, err)
	}
	h.settings = s
	_, err = h.prepareOne(t.Context(), config.Instance{Key: "k", Name: "k"}, targets[0], &config.BrokerConnection{BrokerID: "b"}, [2]int{1, 2})
	if err == nil || !strings.Contains(err.Error(), "set runtime_target.context") || !strings.Contains(err.Error(), broken) {
		t.Errorf("err = %v, want the unreadable kubeconfig %s named", err, broken)
	}
}
