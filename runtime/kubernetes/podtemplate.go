package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/scion-go/scion/runtime"
)

// AgentPodTemplate is the pod spec the runtime would give an agent with
// resolved settings s (an agent that asks nothing of its own): the same
// buildPod as Create. `scion check` reads its ServiceAccount and
// automountServiceAccountToken from it, so that what it reports is what
// the runtime does, not what the check assumes.
func AgentPodTemplate(s Settings) (corev1.PodSpec, error) {
	pod, _, err := buildPod(podInput{spec: runtime.Spec{AgentID: "check", BrokerID: "check"}, settings: s, name: "scion-check"})
	if err != nil {
		return corev1.PodSpec{}, err
	}
	return pod.Spec, nil
}
