package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv"
)

// twoInstances is the spec's example: a Docker instance and a
// Kubernetes one (whose context is left to the kubeconfig), plus a third
// never registered.
const twoInstances = `server:
  broker:
    instances:
      - key: local-docker
        name: local-docker
        runtime_target:
          type: docker
      - key: k8s-batch
        name: k8s-batch
        runtime_target:
          type: kubernetes
          shared_dir_size: 40Gi
          safe_to_evict: false
        maxAgents: 7
      - key: k8s-gpu
        name: k8s-gpu
        runtime_target: {type: kubernetes, context: gpu-cluster, namespace: agents}
`

// writeSettings writes settings.yaml, and a kubeconfig whose current
// context is kind-dev as $KUBECONFIG.
func writeSettings(t *testing.T, home, doc string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "settings.yaml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(home, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
current-context: kind-dev
clusters: [{name: dev, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: dev, user: {token: x}}]
contexts: [{name: kind-dev, context: {cluster: dev, user: dev}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
}

func setExperimentOn(t *testing.T, e *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	s, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Experiments == nil {
		s.Experiments = map[string]bool{}
	}
	s.Experiments[api.ExperimentFlatRuntimeBrokers] = true
	if _, err := e.Admin.PutSettings(ctx, *s); err != nil {
		t.Fatal(err)
	}
}

// With the experiment off, the Hub refuses the instance's target: the
// refusal is shown with its code and how to turn the experiment on, and
// the instance is registered without its target, not activated, its
// credentials saved (marked with its key and target) for the start that
// activates it once the experiment is on.
func TestRegisterInstanceExperimentOff(t *testing.T) {
	home := setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	writeSettings(t, home, twoInstances)

	r := runCLI(t, "", "runtime-broker", "register", "--instance", "local-docker", "-o", "json")
	if r.code != 0 || !strings.Contains(r.err, "not activated") || !strings.Contains(r.err, "experiment_disabled: ") ||
		!strings.Contains(r.err, "scion hub settings set --experiment hub.flat_runtime_brokers=on") {
		t.Fatalf("register with the experiment off: %+v", r)
	}
	var reg instanceRegistration
	if err := json.Unmarshal([]byte(r.out), &reg); err != nil {
		t.Fatal(err)
	}
	if reg.Activated || !strings.Contains(reg.NotActivated, "experiment_disabled") || reg.BrokerID == "" {
		t.Fatalf("register -o json: %+v; want a broker ID, not activated, and why", reg)
	}
	cs := loadCreds(t).Connections
	if len(cs) != 1 || cs[0].Instance != "local-docker" || cs[0].BrokerID != reg.BrokerID || cs[0].RuntimeTarget == nil ||
		cs[0].RuntimeTarget.Type != api.RuntimeTargetDocker {
		t.Fatalf("credentials saved: %+v; want the instance's, with its target", cs)
	}
	b, err := e.Admin.GetBroker(context.Background(), "local-docker")
	if err != nil || b.ID != reg.BrokerID || b.RuntimeTarget != nil {
		t.Fatalf("the Hub's broker local-docker: %+v (%v); want it recorded without a target until its hello", b, err)
	}
}

func TestRegisterInstanceAndStatus(t *testing.T) {
	home := setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	writeSettings(t, home, twoInstances)
	setExperimentOn(t, e)
	ctx := context.Background()

	// The Kubernetes instance: its unset context is the kubeconfig's
	// current one, its unset namespace "default"; its maxAgents is set.
	r := mustRun(t, "runtime-broker", "register", "--instance", "k8s-batch", "-o", "json")
	var reg instanceRegistration
	if err := json.Unmarshal([]byte(r.out), &reg); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	wantTarget := api.RuntimeTarget{Type: "kubernetes", Context: "kind-dev", Namespace: "default"}
	if reg.Instance != "k8s-batch" || reg.Name != "k8s-batch" || reg.RuntimeTarget != wantTarget || !reg.MaxAgentsApplied || !reg.HubEndpointSaved {
		t.Errorf("registration %+v", reg)
	}
	b, err := e.Admin.GetBroker(ctx, "k8s-batch")
	if err != nil {
		t.Fatal(err)
	}
	if b.RuntimeTarget == nil || *b.RuntimeTarget != wantTarget || b.Settings.MaxAgents == nil || *b.Settings.MaxAgents != 7 {
		t.Errorf("the Hub's record: target %+v, settings %+v", b.RuntimeTarget, b.Settings)
	}
	c := loadCreds(t).ForInstance(e.URL, "k8s-batch")
	if c == nil || c.BrokerID != b.ID || c.Secret == "" || c.Instance != "k8s-batch" ||
		c.RuntimeTarget == nil || api.RuntimeTarget(*c.RuntimeTarget) != wantTarget {
		t.Fatalf("saved connection %+v (it records the target it registered serving)", c)
	}
	if strings.Contains(r.out, c.Secret) {
		t.Error("register printed the secret")
	}
	if loadCreds(t).ForHub(e.URL) != nil {
		t.Error("the instance's connection passes for the regular broker's")
	}
	if s := loadSettings(t); s.Server.Broker.HubEndpoint != e.URL {
		t.Errorf("hub_endpoint %q", s.Server.Broker.HubEndpoint)
	}

	// Registered already: refused without --force, nothing changes.
	if r := runCLI(t, "", "runtime-broker", "register", "--instance", "k8s-batch"); r.code != 1 || !strings.Contains(r.err, "instance k8s-batch is already registered with") {
		t.Errorf("re-register: %+v", r)
	}
	r = mustRun(t, "runtime-broker", "register", "--instance", "local-docker")
	if !strings.Contains(r.out, "Instance local-docker serves docker.") {
		t.Errorf("register output: %s", r.out)
	}
	creds := loadCreds(t)
	if len(creds.Connections) != 2 || creds.ForInstance(e.URL, "local-docker") == nil || creds.ForInstance(e.URL, "local-docker").BrokerID == c.BrokerID {
		t.Fatalf("connections %+v", creds.Connections)
	}
	dockerID := creds.ForInstance(e.URL, "local-docker").BrokerID

	// status lists every instance, its target and its state.
	st := statusJSON(t)
	want := []instanceStatus{
		{Key: "local-docker", Name: "local-docker", BrokerID: dockerID, Registered: true, RuntimeTarget: api.RuntimeTarget{Type: "docker"}, Target: "docker", State: api.BrokerOffline},
		{Key: "k8s-batch", Name: "k8s-batch", BrokerID: b.ID, Registered: true, RuntimeTarget: wantTarget, Target: "kubernetes:kind-dev/default", State: api.BrokerOffline},
		{Key: "k8s-gpu", Name: "k8s-gpu", RuntimeTarget: api.RuntimeTarget{Type: "kubernetes", Context: "gpu-cluster", Namespace: "agents"}, Target: "kubernetes:gpu-cluster/agents", State: stateNotRegistered},
	}
	if len(st.Instances) != 3 {
		t.Fatalf("status: %+v", st)
	}
	for i := range want {
		got := st.Instances[i]
		got.MaxAgents = nil
		if got != want[i] {
			t.Errorf("instance %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
	r = mustRun(t, "runtime-broker", "status")
	for _, line := range []string{"local-docker  local-docker  " + dockerID + "  docker", "k8s-batch     k8s-batch     " + b.ID + "  kubernetes:kind-dev/default",
		"k8s-gpu       k8s-gpu       not registered"} {
		if !strings.Contains(r.out, line) {
			t.Errorf("status table lacks %q:\n%s", line, r.out)
		}
	}

	// Deregistered at the Hub (the local credentials stay): the Hub says so.
	if err := e.Admin.DeregisterBroker(ctx, dockerID); err != nil {
		t.Fatal(err)
	}
	if s := statusJSON(t); s.Instances[0].State != stateNotRegisteredAtHub || s.Instances[1].State != api.BrokerOffline {
		t.Errorf("after the deregistration: %+v", s.Instances)
	}

	// Another Hub selected: the connections are e's, so none is
	// registered there.
	useHub(t, "team", "http://127.0.0.1:1", e.AdminToken)
	if s := statusJSON(t); s.Instances[1].State != stateNotRegistered || s.HubEndpoint != "http://127.0.0.1:1" {
		t.Errorf("another Hub selected: %+v", s)
	}
	// A Hub that cannot be asked: its registered instances are unknown.
	for _, x := range creds.Connections {
		x.HubEndpoint = "http://127.0.0.1:1"
	}
	if err := creds.Save(); err != nil {
		t.Fatal(err)
	}
	if s := statusJSON(t); s.Instances[1].State != stateUnknown || s.Instances[1].StateError == "" || s.Instances[1].BrokerID != b.ID {
		t.Errorf("unreachable Hub: %+v", s.Instances[1])
	}
	if r := mustRun(t, "runtime-broker", "status"); !strings.Contains(r.err, "warning: instance k8s-batch: the Hub could not be asked") {
		t.Errorf("no warning: %+v", r)
	}
}

func statusJSON(t *testing.T) instancesStatus {
	t.Helper()
	r := mustRun(t, "runtime-broker", "status", "-o", "json")
	var s instancesStatus
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	return s
}

// A bad entry is refused by the commands, naming it and its field.
func TestInstanceCommandsRefuseABadEntry(t *testing.T) {
	home := setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	setExperimentOn(t, e)
	for _, tc := range []struct{ name, doc, want string }{
		{"duplicate key", "server:\n  broker:\n    instances:\n      - {key: a, name: a, runtime_target: {type: docker}}\n      - {key: a, name: b, runtime_target: {type: kubernetes}}\n",
			`server.broker.instances[1] (key "a"): key "a": already the key of server.broker.instances[0] (key "a")`},
		{"two runtime targets", "server:\n  broker:\n    instances:\n      - key: a\n        name: a\n        runtime_target: [{type: docker}, {type: kubernetes}]\n",
			`server.broker.instances[0] (key "a"): runtime_target: give exactly one runtime target`},
		{"unknown type", "server:\n  broker:\n    instances:\n      - {key: a, name: a, runtime_target: {type: docker}}\n      - {key: k8s-batch, name: b, runtime_target: {type: podman}}\n",
			`server.broker.instances[1] (key "k8s-batch"): runtime_target.type "podman": use docker or kubernetes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeSettings(t, home, tc.doc)
			for _, args := range [][]string{{"runtime-broker", "register", "--instance", "a"}, {"runtime-broker", "status"}} {
				r := runCLI(t, "", args...)
				if r.code != 1 || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, config.SettingsPath()) {
					t.Errorf("scion %s: %+v\nwant the error to contain %s", strings.Join(args, " "), r, tc.want)
				}
			}
			if cs := loadCreds(t).Connections; len(cs) != 0 {
				t.Errorf("credentials saved: %+v", cs)
			}
		})
	}
	// An unknown key names the configured ones.
	writeSettings(t, home, twoInstances)
	if r := runCLI(t, "", "runtime-broker", "register", "--instance", "k8s"); r.code != 1 || !strings.Contains(r.err, "the keys are: local-docker, k8s-batch, k8s-gpu") {
		t.Errorf("unknown instance: %+v", r)
	}
	// --name does not go with --instance.
	if r := runCLI(t, "", "runtime-broker", "register", "--instance", "k8s-gpu", "--name", "x"); r.code != 2 {
		t.Errorf("--name with --instance: %+v", r)
	}
}

// An instance whose name another broker holds at the Hub: the Hub's
// refusal says to choose another --name, which --instance refuses, so the
// CLI says what to change instead (the entry's name); nothing is saved.
func TestRegisterInstanceNameTaken(t *testing.T) {
	home := setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	writeSettings(t, home, twoInstances)
	setExperimentOn(t, e)
	if _, err := e.Admin.RegisterBroker(context.Background(), api.RegisterBrokerRequest{Name: "k8s-batch"}); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, "", "runtime-broker", "register", "--instance", "k8s-batch")
	if r.code != 1 || !strings.Contains(r.err, "error: already_exists: ") ||
		!strings.Contains(r.err, `instance k8s-batch registers under its entry's name "k8s-batch" (server.broker.instances, name), which another Runtime Broker holds on `+e.URL+`: give the entry another name, or deregister that broker`) {
		t.Fatalf("register with the name taken: %+v", r)
	}
	if cs := loadCreds(t).Connections; len(cs) != 0 {
		t.Errorf("credentials saved: %+v", cs)
	}
}

// Without a readable kubeconfig, only the instances that leave their
// context to it cannot be registered: the Docker instance registers (as
// 'runtime-broker start' would run it beside the refused one), and the
// Kubernetes one is refused naming runtime_target.context, nothing saved.
func TestRegisterInstanceWithoutKubeconfig(t *testing.T) {
	home := setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	writeSettings(t, home, twoInstances)
	t.Setenv("KUBECONFIG", filepath.Join(home, "no-such-kubeconfig"))
	setExperimentOn(t, e)

	r := runCLI(t, "", "runtime-broker", "register", "--instance", "k8s-batch")
	if r.code != 1 || !strings.Contains(r.err, "instance k8s-batch: runtime_target.context is unset") {
		t.Fatalf("register k8s-batch without a kubeconfig: %+v", r)
	}
	if cs := loadCreds(t).Connections; len(cs) != 0 {
		t.Fatalf("credentials saved: %+v", cs)
	}
	r = mustRun(t, "runtime-broker", "register", "--instance", "local-docker")
	if !strings.Contains(r.out, "Instance local-docker serves docker.") {
		t.Errorf("register output: %s", r.out)
	}
	if c := loadCreds(t).ForInstance(e.URL, "local-docker"); c == nil {
		t.Error("no connection saved for local-docker")
	}
}

// With no Hub selected and no server.broker.hub_endpoint, an instance
// whose credentials are stored is not "not registered": its broker ID
// shows, its state is unknown, and the warning says which Hub holds it.
func TestInstancesStatusWithNoHub(t *testing.T) {
	home := setHome(t)
	writeSettings(t, home, twoInstances)
	c := &config.BrokerCredentials{}
	c.Put(&config.BrokerConnection{Name: "local-docker", Instance: "local-docker", HubEndpoint: "https://hub.example",
		BrokerID: "b1", BrokerName: "local-docker", Secret: "s"})
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	st := statusJSON(t)
	if len(st.Instances) != 3 {
		t.Fatalf("status: %+v", st)
	}
	got := st.Instances[0]
	if got.BrokerID != "b1" || !got.Registered || got.State != stateUnknown || !strings.Contains(got.StateError, "registered with https://hub.example") {
		t.Errorf("local-docker: %+v", got)
	}
	if got := st.Instances[1]; got.Registered || got.State != stateNotRegistered {
		t.Errorf("k8s-batch: %+v", got)
	}
	r := mustRun(t, "runtime-broker", "status")
	if !strings.Contains(r.out, "local-docker  local-docker  b1") || !strings.Contains(r.err, "warning: instance local-docker: the Hub could not be asked") {
		t.Errorf("status: %+v", r)
	}
}
