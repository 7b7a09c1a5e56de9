package launch

import (
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/spoke/fleet"
)

// loadFleet reads the fleet file of delegated Jobs: --clusters PATH when
// given (then it must exist), else clusters.toml beside settings.yaml (a
// missing one is an empty fleet). A bad file fails the start with the
// file, cluster and field.
func loadFleet(explicit string) (*fleet.Fleet, error) {
	return fleet.Load(fleet.Path(config.SettingsPath(), explicit), explicit != "")
}

// ambientCluster is a Kubernetes broker's own cluster for Jobs that name
// none: the kubeconfig of server.broker.kubernetes at kubeContext (""
// is its current context), in namespace (else the context's). A
// kubeconfig that does not load leaves the broker without one, logged:
// its agents are what it is for, and it refuses such Jobs with
// cluster_not_found.
func ambientCluster(s *config.Settings, kubeContext, namespace string, log *slog.Logger) (*rest.Config, string) {
	k, err := s.Server.Broker.Kubernetes()
	if err == nil {
		var cfg *rest.Config
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if k.Kubeconfig != "" {
			rules.ExplicitPath = k.Kubeconfig
		}
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
		if cfg, err = cc.ClientConfig(); err == nil {
			if namespace == "" {
				namespace, _, _ = cc.Namespace()
			}
			return cfg, namespace
		}
	}
	log.Warn("no ambient cluster for delegated Jobs: Jobs that name no cluster are refused", "err", fmt.Sprint(err))
	return nil, ""
}

// brokerJobs is a broker's JobsConfig: the fleet, the profiles that pick
// and override it (none for a flat instance), and the ambient cluster of
// a Kubernetes broker.
func brokerJobs(f *fleet.Fleet, profiles []config.ProfileSettings, ambient *rest.Config, ns string) broker.JobsConfig {
	return broker.JobsConfig{Fleet: f, Profiles: profiles, Source: config.SettingsPath(), Ambient: ambient, AmbientNamespace: ns}
}
