package api

import "strings"

// Flat Runtime Brokers (multi-broker spec, "Flat Runtime Brokers
// (experimental)"): a broker that serves exactly one runtime target with a
// stable identity. Its record carries RuntimeTarget; an agent placed on it
// carries a PinnedRuntimeTarget, read-only, and every operation that
// reaches the broker for the agent first checks the two agree.

// Runtime target types.
const (
	RuntimeTargetDocker     = "docker"
	RuntimeTargetKubernetes = "kubernetes"
)

// RuntimeTarget is the one runtime target a flat Runtime Broker serves:
// the local Docker daemon, or a Kubernetes cluster (kubeconfig context)
// and namespace. The broker reports it resolved: a Kubernetes target's
// context and namespace are never empty (the kubeconfig's current context
// and the default namespace filled in).
type RuntimeTarget struct {
	Type      string `json:"type"`
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Complete reports whether t names a target fully: a known type, and for
// Kubernetes both the context and the namespace.
func (t RuntimeTarget) Complete() bool {
	switch t.Type {
	case RuntimeTargetDocker:
		return t.Context == "" && t.Namespace == ""
	case RuntimeTargetKubernetes:
		return t.Context != "" && t.Namespace != ""
	}
	return false
}

// String is the target as the CLI shows it: "docker", or
// "kubernetes:<context>/<namespace>".
func (t RuntimeTarget) String() string {
	if t.Type != RuntimeTargetKubernetes {
		return t.Type
	}
	return t.Type + ":" + t.Context + "/" + t.Namespace
}

// PinnedRuntimeTarget is an agent's pin: the flat Runtime Broker it was
// placed on and the runtime target that broker served then. The Hub sets
// it when it places a new agent on a flat broker; no request changes it.
type PinnedRuntimeTarget struct {
	BrokerID string `json:"runtimeBrokerId"`
	RuntimeTarget
}

// Complete reports whether the pin names a broker and a complete target.
func (p PinnedRuntimeTarget) Complete() bool {
	return p.BrokerID != "" && p.RuntimeTarget.Complete()
}

// Hub experiments (HubSettings.Experiments), each off by default.
const (
	// ExperimentFlatRuntimeBrokers lets flat Runtime Brokers register.
	ExperimentFlatRuntimeBrokers = "hub.flat_runtime_brokers"
	// ExperimentK8sNFSHome gives Kubernetes agents a persistent home on
	// the shared-dir NFS export.
	ExperimentK8sNFSHome = "hub.k8s_nfs_home"
)

// Experiments lists every experiment a Hub knows, in the order the CLI
// shows them; a setting naming another is refused.
var Experiments = []string{ExperimentFlatRuntimeBrokers, ExperimentK8sNFSHome}

// KnownExperiment reports whether name is one of Experiments.
func KnownExperiment(name string) bool {
	for _, e := range Experiments {
		if e == name {
			return true
		}
	}
	return false
}

// ExperimentList is Experiments joined for a message.
func ExperimentList() string { return strings.Join(Experiments, ", ") }
