package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

// TestStatusShowsKubernetesProfiles: `runtime-broker status` shows each
// Kubernetes profile's kubeconfig context and namespace, unset ones filled
// from this machine's server.broker.kubernetes defaults, in the table and
// in -o json.
func TestStatusShowsKubernetesProfiles(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{RuntimeNames: map[string]string{"k8s": "kubernetes"},
		Profiles: map[string][]wire.Profile{"k8s": {
			{Name: "batch", Runtime: "kubernetes", Default: true, Settings: map[string]string{"context": "batch-cluster", "namespace": "batch"}},
			{Name: "gpu", Runtime: "kubernetes", Settings: map[string]string{"context": "gpu-cluster"}},
			{Name: "local", Runtime: "docker"},
		}}})
	useHub(t, "team", e.URL, e.AdminToken)
	mustRun(t, "runtime-broker", "register", "--name", "k8s")
	// The registered broker runs and reports its runtime and profiles.
	c := loadCreds(t).ForHub(e.URL)
	e.RunBroker(c.BrokerID, "k8s", c.Secret)
	s, err := config.LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	s.Server.Broker.Extra = map[string]any{"kubernetes": map[string]any{"defaults": map[string]any{"namespace": "agents"}}}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}

	r := mustRun(t, "runtime-broker", "status")
	want := "batch (context batch-cluster, namespace batch); gpu (context gpu-cluster, namespace agents)"
	if !strings.Contains(r.out, "Kubernetes profiles:") || !strings.Contains(r.out, want) {
		t.Errorf("status lacks the Kubernetes profiles %q:\n%s", want, r.out)
	}
	r = mustRun(t, "runtime-broker", "status", "-o", "json")
	var st struct {
		KubernetesProfiles []config.KubernetesTarget `json:"kubernetesProfiles"`
	}
	if err := json.Unmarshal([]byte(r.out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.KubernetesProfiles) != 2 || st.KubernetesProfiles[1] != (config.KubernetesTarget{Profile: "gpu", Context: "gpu-cluster", Namespace: "agents"}) {
		t.Errorf("status json kubernetesProfiles = %+v", st.KubernetesProfiles)
	}
}

func TestInstallBinary(t *testing.T) {
	dir := t.TempDir()
	src := dir + "/src"
	if err := os.WriteFile(src, []byte("binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := dir + "/bin/scion"
	if err := os.Mkdir(dir+"/bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := installBinary(src, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if b, _ := os.ReadFile(dst); err != nil || string(b) != "binary" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed %q mode %v, %v", b, fi.Mode(), err)
	}
}

// TestStatusShowsTheAgentsHubAddress: for a Kubernetes broker whose
// hub_endpoint is loopback, `runtime-broker status` shows the address its
// agents get, the setting that changes it and a warning that pods cannot
// reach it, in the table and in -o json; once the setting names a
// reachable address, status shows that address and no warning.
func TestStatusShowsTheAgentsHubAddress(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{RuntimeNames: map[string]string{"k8s": "kubernetes"}})
	useHub(t, "team", e.URL, e.AdminToken)
	mustRun(t, "runtime-broker", "register", "--name", "k8s")
	c := loadCreds(t).ForHub(e.URL)
	e.RunBroker(c.BrokerID, "k8s", c.Secret) // reports the kubernetes runtime

	type status struct {
		AgentHubEndpoint string `json:"agentHubEndpoint"`
		AgentHubSetting  string `json:"agentHubSetting"`
		AgentHubWarning  string `json:"agentHubWarning"`
	}
	read := func() (string, status) {
		t.Helper()
		table := mustRun(t, "runtime-broker", "status").out
		var st status
		if err := json.Unmarshal([]byte(mustRun(t, "runtime-broker", "status", "-o", "json").out), &st); err != nil {
			t.Fatal(err)
		}
		return table, st
	}
	table, st := read()
	for _, want := range []string{"Agents reach the Hub at:", e.URL, "server.broker.agent_hub_endpoint:", "Warning:", "loopback"} {
		if !strings.Contains(table, want) {
			t.Errorf("status lacks %q:\n%s", want, table)
		}
	}
	if st.AgentHubEndpoint != e.URL || st.AgentHubSetting != "server.broker.agent_hub_endpoint" ||
		!strings.Contains(st.AgentHubWarning, "loopback") || !strings.Contains(st.AgentHubWarning, st.AgentHubSetting) {
		t.Errorf("status json = %+v, want the loopback address, the setting and a warning naming it", st)
	}

	s, err := config.LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	s.Server.Broker.AgentHubEndpoint = "https://hub.cluster.example"
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	table, st = read()
	if !strings.Contains(table, "https://hub.cluster.example") || strings.Contains(table, "Warning:") {
		t.Errorf("status with the setting:\n%s", table)
	}
	if st.AgentHubEndpoint != "https://hub.cluster.example" || st.AgentHubWarning != "" {
		t.Errorf("status json with the setting = %+v", st)
	}
}
