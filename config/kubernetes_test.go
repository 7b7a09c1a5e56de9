package config

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestKubernetesSettingsRoundTrip(t *testing.T) {
	in := `server:
  broker:
    runtime: kubernetes
    kubernetes:
      kubeconfig: /etc/scion/kubeconfig
      scion_image: scion:dev
      defaults:
        namespace: agents
    profiles:
      - name: batch
        runtime: kubernetes
        settings:
          context: batch-cluster
          shared_dir_size: 40Gi
      - name: local
        runtime: docker
`
	var s Settings
	if err := yaml.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	k, err := s.Server.Broker.Kubernetes()
	if err != nil {
		t.Fatal(err)
	}
	want := KubernetesSettings{Kubeconfig: "/etc/scion/kubeconfig", ScionImage: "scion:dev", Defaults: map[string]string{"namespace": "agents"}}
	if !reflect.DeepEqual(k, want) {
		t.Fatalf("Kubernetes() = %+v, want %+v", k, want)
	}
	got := KubernetesTargets(s.Server.Broker.Profiles, k.Defaults)
	if len(got) != 1 || got[0] != (KubernetesTarget{Profile: "batch", Context: "batch-cluster", Namespace: "agents"}) {
		t.Fatalf("KubernetesTargets = %+v", got)
	}
	// The section survives a save.
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	var again Settings
	if err := yaml.Unmarshal(out, &again); err != nil {
		t.Fatal(err)
	}
	if k2, _ := again.Server.Broker.Kubernetes(); !reflect.DeepEqual(k2, want) {
		t.Fatalf("after a round trip: %+v", k2)
	}
}

func TestKubernetesSettingsAbsentOrBad(t *testing.T) {
	if k, err := (BrokerSettings{}).Kubernetes(); err != nil || !reflect.DeepEqual(k, KubernetesSettings{}) {
		t.Fatalf("no section: %+v, %v", k, err)
	}
	if _, err := (BrokerSettings{Extra: map[string]any{"kubernetes": "not a map"}}).Kubernetes(); err == nil {
		t.Fatal("a scalar section was accepted")
	}
}
