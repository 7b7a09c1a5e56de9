package cli

import (
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// kubernetesTargets lists the broker's Kubernetes profiles with their
// kubeconfig context and namespace: the profiles the Hub has from the
// broker's hello, with what they leave unset filled from this machine's
// server.broker.kubernetes defaults.
func kubernetesTargets(ps []api.BrokerProfile, local config.BrokerSettings) []config.KubernetesTarget {
	profiles := make([]config.ProfileSettings, len(ps))
	for i, p := range ps {
		profiles[i] = config.ProfileSettings{Name: p.Name, Runtime: p.Runtime, Default: p.Default, Settings: p.Settings}
	}
	k, _ := local.Kubernetes() // a bad section is the broker's error to report, not status's
	return config.KubernetesTargets(profiles, k.Defaults)
}

// kubernetesTargetsText renders targets for the status table:
// "batch (context batch-cluster, namespace agents); gpu (...)".
func kubernetesTargetsText(ts []config.KubernetesTarget) string {
	if len(ts) == 0 {
		return "(none)"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Profile + " (context " + firstNonEmpty(t.Context, "(current)") +
			", namespace " + firstNonEmpty(t.Namespace, config.DefaultKubernetesNamespace) + ")"
	}
	return strings.Join(parts, "; ")
}
