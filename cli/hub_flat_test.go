package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestHubSettingsExperiments: `scion hub settings get` lists the known
// experiments, off; `set --experiment name=on` (repeatable, on/off/true/
// false) turns them on through the Hub, keeping the agent defaults; the
// Hub's refusal of an unknown name reaches the user with the known names;
// a malformed flag is a usage error that never reaches the Hub.
func TestHubSettingsExperiments(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	ctx := context.Background()
	mustRun(t, "hub", "settings", "set", "--default-image", "img:1")

	r := mustRun(t, "hub", "settings", "get")
	for _, w := range []string{"experiments:", api.ExperimentFlatRuntimeBrokers + ": off", api.ExperimentK8sNFSHome + ":", "default_image:"} {
		if !strings.Contains(strings.Join(strings.Fields(r.out), " "), w) {
			t.Errorf("settings get lacks %q:\n%s", w, r.out)
		}
	}

	r = mustRun(t, "hub", "settings", "set", "--experiment", api.ExperimentFlatRuntimeBrokers+"=on", "--experiment", api.ExperimentK8sNFSHome+"=true")
	if got := strings.Join(strings.Fields(r.out), " "); !strings.Contains(got, api.ExperimentFlatRuntimeBrokers+": on") || !strings.Contains(got, api.ExperimentK8sNFSHome+": on") {
		t.Errorf("set answered:\n%s", r.out)
	}
	s, err := e.Admin.GetSettings(ctx)
	if err != nil || !s.Experiments[api.ExperimentFlatRuntimeBrokers] || !s.Experiments[api.ExperimentK8sNFSHome] || s.AgentDefaults.DefaultImage != "img:1" {
		t.Fatalf("settings %+v, %v", s, err)
	}
	r = mustRun(t, "hub", "settings", "set", "--experiment", api.ExperimentK8sNFSHome+"=off", "-o", "json")
	var out api.HubSettings
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.out)
	}
	if !out.Experiments[api.ExperimentFlatRuntimeBrokers] || out.Experiments[api.ExperimentK8sNFSHome] {
		t.Fatalf("-o json experiments %v", out.Experiments)
	}

	r = runCLI(t, "", "hub", "settings", "set", "--experiment", "hub.flat_brokers=on")
	if r.code == 0 || !strings.Contains(r.err, "invalid_request") || !strings.Contains(r.err, api.ExperimentList()) {
		t.Fatalf("unknown experiment: exit %d\n%s", r.code, r.err)
	}
	before := hubRequests(t, e)
	for _, bad := range []string{api.ExperimentFlatRuntimeBrokers, api.ExperimentFlatRuntimeBrokers + "=yes", "=on"} {
		r = runCLI(t, "", "hub", "settings", "set", "--experiment", bad)
		if r.code != 2 || !strings.Contains(r.err, "invalid --experiment") {
			t.Errorf("--experiment %q: exit %d\n%s", bad, r.code, r.err)
		}
	}
	if n := hubRequests(t, e); n != before {
		t.Errorf("a malformed --experiment reached the Hub (%d requests)", n-before)
	}
	if s, _ := e.Admin.GetSettings(ctx); !s.Experiments[api.ExperimentFlatRuntimeBrokers] {
		t.Fatal("a refused set changed the settings")
	}
	r = mustRun(t, "hub", "settings", "set", "--help")
	if !strings.Contains(r.out, "--experiment") || !strings.Contains(r.out, api.ExperimentFlatRuntimeBrokers+"=on") {
		t.Errorf("--help does not explain --experiment:\n%s", r.out)
	}
}

// TestHubBrokersShowsFlatTargets: `scion hub brokers` has a TARGET column
// with a flat broker's runtime target and "-" for a regular one, and -o
// json carries runtimeTarget; `scion create` of an agent on the flat broker
// says what it is pinned to, and -o json of create and list carries
// pinnedRuntimeTarget.
func TestHubBrokersShowsFlatTargets(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	s, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true}
	if _, err := e.Admin.PutSettings(ctx, *s); err != nil {
		t.Fatal(err)
	}
	k8s := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch-cluster", Namespace: "agents"}
	f := e.AddFlatBroker("k8s-batch", k8s, nil)
	useHub(t, "team", e.URL, e.AdminToken)

	r := mustRun(t, "hub", "brokers")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "TARGET") {
		t.Fatalf("want a header with TARGET and 2 rows:\n%s", r.out)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		rows[strings.Fields(l)[0]] = strings.Fields(l)
	}
	if got := rows["k8s-batch"]; len(got) < 4 || got[3] != "kubernetes:batch-cluster/agents" {
		t.Errorf("flat broker row %v", got)
	}
	if got := rows["b1"]; len(got) < 4 || got[3] != "-" {
		t.Errorf("regular broker row %v", got)
	}
	r = mustRun(t, "hub", "brokers", "-o", "json")
	var bs []api.RuntimeBroker
	if err := json.Unmarshal([]byte(r.out), &bs); err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if (b.Name == "k8s-batch") != (b.RuntimeTarget != nil) || (b.RuntimeTarget != nil && *b.RuntimeTarget != k8s) {
			t.Errorf("-o json broker %s target %v", b.Name, b.RuntimeTarget)
		}
	}

	r = mustRun(t, "create", "w", "--broker", "k8s-batch", "--project", "default", "--", "x")
	if !strings.Contains(r.out, "Pinned runtime target: kubernetes:batch-cluster/agents (runtime broker "+f.ID+")") {
		t.Errorf("create:\n%s", r.out)
	}
	want := api.PinnedRuntimeTarget{BrokerID: f.ID, RuntimeTarget: k8s}
	r = mustRun(t, "create", "w2", "--broker", "k8s-batch", "--project", "default", "-o", "json", "--", "x")
	var a api.Agent
	if err := json.Unmarshal([]byte(r.out), &a); err != nil {
		t.Fatal(err)
	}
	if a.PinnedRuntimeTarget == nil || *a.PinnedRuntimeTarget != want {
		t.Errorf("create -o json pin %v", a.PinnedRuntimeTarget)
	}
	r = mustRun(t, "list", "--project", "default", "-o", "json")
	var ags []api.Agent
	if err := json.Unmarshal([]byte(r.out), &ags); err != nil || len(ags) != 2 {
		t.Fatalf("list -o json: %v\n%s", err, r.out)
	}
	for _, a := range ags {
		if a.PinnedRuntimeTarget == nil || *a.PinnedRuntimeTarget != want {
			t.Errorf("list -o json: agent %s pin %v", a.Slug, a.PinnedRuntimeTarget)
		}
	}
}
