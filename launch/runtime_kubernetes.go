package launch

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime/kubernetes"
)

// newKubernetesRuntime builds the Kubernetes runtime from the global
// settings: server.broker.kubernetes (kubeconfig, scion image, the
// broker-wide defaults) and every profile whose runtime is kubernetes.
func newKubernetesRuntime(brokerID string, log *slog.Logger) (*kubernetes.Runtime, error) {
	s, err := config.LoadSettings()
	if err != nil {
		return nil, err
	}
	opts, err := kubernetesOptions(s.Server.Broker, brokerID)
	if err != nil {
		return nil, err
	}
	if err := sharedDirsOnShare(&opts.Defaults, s.Server.SharedDirStorage); err != nil {
		return nil, err
	}
	rt, err := kubernetes.New(opts)
	if err != nil {
		return nil, err
	}
	for _, t := range config.KubernetesTargets(s.Server.Broker.Profiles, opts.Defaults.Map()) {
		log.Info("kubernetes profile", "profile", t.Profile, "context", cmp.Or(t.Context, "(current)"),
			"namespace", cmp.Or(t.Namespace, kubernetes.DefaultNamespace))
	}
	log.Info("using the kubernetes runtime: agents run as pods", "profiles", len(opts.Profiles))
	return rt, nil
}

// kubernetesOptions turns the broker settings into runtime options. A
// profile setting that does not parse is an error naming the profile, so
// a typo stops the broker at start rather than failing agents later.
func kubernetesOptions(b config.BrokerSettings, brokerID string) (kubernetes.Options, error) {
	k, err := b.Kubernetes()
	if err != nil {
		return kubernetes.Options{}, err
	}
	defaults, err := kubernetes.ParseSettings(k.Defaults)
	if err != nil {
		return kubernetes.Options{}, fmt.Errorf("server.broker.kubernetes.defaults: %w", err)
	}
	opts := kubernetes.Options{BrokerID: brokerID, Kubeconfig: k.Kubeconfig, Defaults: defaults,
		ScionImage: k.ScionImage, ImageVolume: k.ImageVolume, Profiles: map[string]kubernetes.Settings{},
		AgentChoices: kubernetes.AgentChoices{Contexts: k.AgentContexts, Namespaces: k.AgentNamespaces,
			ServiceAccounts: k.AgentServiceAccounts}}
	profiles, err := brokerProfiles(b.Profiles)
	if err != nil {
		return kubernetes.Options{}, err
	}
	for _, p := range profiles {
		if !strings.EqualFold(p.Runtime, config.RuntimeKubernetes) {
			continue
		}
		ps, err := kubernetes.ParseSettings(p.Settings)
		if err != nil {
			return kubernetes.Options{}, fmt.Errorf("server.broker.profiles %s: %w", p.Name, err)
		}
		opts.Profiles[p.Name] = ps
		if p.Default {
			opts.DefaultProfile = p.Name
		}
	}
	return opts, nil
}

// sharedDirsOnShare makes server.shared_dir_storage on nfs the
// Kubernetes runtime's default shared-directory backend: the share's
// claim (its pv_name, unless the defaults name one), sub-path
// shared-dirs/<project ID>, the same for every broker of the share. A
// profile's or agent's own shared_dir_storage still wins.
func sharedDirsOnShare(d *kubernetes.Settings, st config.WorkspaceStorageSettings) error {
	share, err := st.ResolveKey("server.shared_dir_storage")
	if err != nil || share == nil {
		return err
	}
	if d.SharedDirStorage != "" {
		return nil
	}
	if d.NFSPVName == "" {
		if share.PVName == "" {
			return fmt.Errorf("server.shared_dir_storage.nfs.shares[0].pv_name is required on a Kubernetes broker: its pods claim the share through that PersistentVolume")
		}
		d.NFSPVName = share.PVName
	}
	d.SharedDirStorage = "nfs"
	return nil
}
