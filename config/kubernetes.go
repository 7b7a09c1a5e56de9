package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// RuntimeKubernetes is the runtime name of Kubernetes profiles and of
// server.broker.runtime for a broker that runs agents as pods.
const RuntimeKubernetes = "kubernetes"

// KubernetesSettings is server.broker.kubernetes: how a broker reaches its
// clusters and the broker-wide defaults of its agents' pods (the layer
// under every profile).
//
//	server:
//	  broker:
//	    runtime: kubernetes
//	    kubernetes:
//	      kubeconfig: /etc/scion/kubeconfig   # default $KUBECONFIG, ~/.kube/config, in-cluster
//	      scion_image: scion-demo:latest      # image with /usr/local/bin/scion, mounted into agents
//	      defaults: {namespace: agents, service_account: scion-agent-sandbox}
//	      agent_namespaces: [agents-gpu]      # an agent's own namespace setting may also be one of these
//	    profiles:
//	      - name: batch
//	        runtime: kubernetes
//	        settings: {context: batch-cluster, namespace: agents, shared_dir_size: 40Gi, safe_to_evict: "false"}
//
// Profile settings keys are those of runtime/kubernetes (context,
// namespace, shared_dir_size, safe_to_evict, priority_class, gke_mode,
// shared_dir_storage, home_storage, nfs_pv_name, run_as_user,
// run_as_group, fs_group, read_only_root_filesystem, ...); the runtime
// validates them when the broker starts.
type KubernetesSettings struct {
	Kubeconfig  string            `yaml:"kubeconfig,omitempty"`
	ScionImage  string            `yaml:"scion_image,omitempty"`
	ImageVolume bool              `yaml:"image_volume,omitempty"`
	Defaults    map[string]string `yaml:"defaults,omitempty"`
	// AgentContexts, AgentNamespaces and AgentServiceAccounts list what
	// an agent's own context, namespace and service_account settings may
	// name besides its profile's values (which are always allowed); with
	// none, an agent cannot move itself to another cluster, namespace or
	// identity.
	AgentContexts        []string `yaml:"agent_contexts,omitempty"`
	AgentNamespaces      []string `yaml:"agent_namespaces,omitempty"`
	AgentServiceAccounts []string `yaml:"agent_service_accounts,omitempty"`
}

// Kubernetes reads server.broker.kubernetes (kept among the broker
// settings' other keys, so that settings.yaml round-trips unchanged).
func (b BrokerSettings) Kubernetes() (KubernetesSettings, error) {
	var k KubernetesSettings
	raw, ok := b.Extra["kubernetes"]
	if !ok || raw == nil {
		return k, nil
	}
	out, err := yaml.Marshal(raw)
	if err == nil {
		err = yaml.Unmarshal(out, &k)
	}
	if err != nil {
		return k, fmt.Errorf("config: server.broker.kubernetes: %w", err)
	}
	return k, nil
}

// KubernetesTarget is what `scion runtime-broker status` shows of a
// Kubernetes profile: its kubeconfig context and namespace ("" when the
// profile leaves them to the defaults).
type KubernetesTarget struct {
	Profile   string `json:"profile"`
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// KubernetesTargets lists the Kubernetes profiles' contexts and
// namespaces, in profile order, filling what a profile leaves unset from
// the broker-wide defaults.
func KubernetesTargets(profiles []ProfileSettings, defaults map[string]string) []KubernetesTarget {
	var out []KubernetesTarget
	for _, p := range profiles {
		if !strings.EqualFold(p.Runtime, RuntimeKubernetes) {
			continue
		}
		t := KubernetesTarget{Profile: p.Name, Context: p.Settings["context"], Namespace: p.Settings["namespace"]}
		if t.Context == "" {
			t.Context = defaults["context"]
		}
		if t.Namespace == "" {
			t.Namespace = defaults["namespace"]
		}
		out = append(out, t)
	}
	return out
}
