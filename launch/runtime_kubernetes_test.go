package launch

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/kubernetes"
)

func TestKubernetesOptions(t *testing.T) {
	b := config.BrokerSettings{
		Extra: map[string]any{"kubernetes": map[string]any{"kubeconfig": "/k", "scion_image": "scion:1",
			"defaults":         map[string]any{"namespace": "agents", "gke_mode": "true"},
			"agent_contexts":   []any{"gpu"},
			"agent_namespaces": []any{"agents-gpu"}, "agent_service_accounts": []any{"scion-agent-gpu"}}},
		Profiles: []config.ProfileSettings{
			{Name: "batch", Runtime: "kubernetes", Settings: map[string]string{"context": "c1", "shared_dir_size": "40Gi", "memory": "2g"}},
			{Name: "gpu", Runtime: "kubernetes", Default: true, Settings: map[string]string{"context": "c2", "safe_to_evict": "false"}},
			{Name: "local", Runtime: "docker"},
		},
	}
	opts, err := kubernetesOptions(b, "b-1")
	if err != nil {
		t.Fatal(err)
	}
	if opts.BrokerID != "b-1" || opts.Kubeconfig != "/k" || opts.ScionImage != "scion:1" || opts.DefaultProfile != "gpu" ||
		opts.Defaults.Namespace != "agents" || opts.Defaults.GKE == nil || !*opts.Defaults.GKE || len(opts.Profiles) != 2 ||
		opts.Profiles["batch"].SharedDirSize != "40Gi" || *opts.Profiles["gpu"].SafeToEvict {
		t.Fatalf("kubernetesOptions = %+v", opts)
	}
	if a := opts.AgentChoices; len(a.Contexts) != 1 || a.Contexts[0] != "gpu" || len(a.Namespaces) != 1 || a.Namespaces[0] != "agents-gpu" ||
		len(a.ServiceAccounts) != 1 || a.ServiceAccounts[0] != "scion-agent-gpu" {
		t.Errorf("AgentChoices = %+v, want server.broker.kubernetes.agent_* lists", a)
	}
	b.Profiles[0].Settings["safe_to_evict"] = "maybe"
	if _, err := kubernetesOptions(b, "b-1"); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Fatalf("a bad profile setting: %v, want an error naming the profile", err)
	}
}

// TestRuntimeNamesTheCLIShows: the runtime names config keeps for the
// CLI (which imports no runtime) are the runtimes' own.
func TestRuntimeNamesTheCLIShows(t *testing.T) {
	if config.DockerAgentNetwork != docker.AgentNetwork {
		t.Errorf("config.DockerAgentNetwork %q, runtime/docker.AgentNetwork %q", config.DockerAgentNetwork, docker.AgentNetwork)
	}
	if config.DefaultKubernetesNamespace != kubernetes.DefaultNamespace {
		t.Errorf("config.DefaultKubernetesNamespace %q, runtime/kubernetes.DefaultNamespace %q", config.DefaultKubernetesNamespace, kubernetes.DefaultNamespace)
	}
}

func TestSharedDirsOnShare(t *testing.T) {
	nfs := func(pv string) config.WorkspaceStorageSettings {
		return config.WorkspaceStorageSettings{Backend: config.StorageNFS, NFS: config.NFSSettings{Shares: []config.NFSShare{
			{Server: "nfs.test", Export: "/srv/scion", SubpathRoot: "shared", MountPath: "/mnt/scion", PVName: pv}}}}
	}
	for _, tc := range []struct {
		name     string
		defaults kubernetes.Settings
		storage  config.WorkspaceStorageSettings
		want     kubernetes.Settings
		wantErr  string
	}{
		{name: "local: untouched", want: kubernetes.Settings{}},
		{name: "nfs: the share's claim", storage: nfs("scion-share"), want: kubernetes.Settings{SharedDirStorage: "nfs", NFSPVName: "scion-share"}},
		{name: "the defaults' pv wins", defaults: kubernetes.Settings{NFSPVName: "mine"}, storage: nfs("scion-share"), want: kubernetes.Settings{SharedDirStorage: "nfs", NFSPVName: "mine"}},
		{name: "the defaults' backend wins", defaults: kubernetes.Settings{SharedDirStorage: "pvc"}, storage: nfs("scion-share"), want: kubernetes.Settings{SharedDirStorage: "pvc"}},
		{name: "nfs without a pv", storage: nfs(""), wantErr: "pv_name is required"},
		{name: "bad backend", storage: config.WorkspaceStorageSettings{Backend: "smb"}, wantErr: "server.shared_dir_storage.backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.defaults
			err := sharedDirsOnShare(&d, tc.storage)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || d != tc.want {
				t.Fatalf("defaults %+v, %v; want %+v", d, err, tc.want)
			}
		})
	}
}
