package kubernetes

import (
	"reflect"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

func bp(b bool) *bool { return &b }

func TestResolveAgentWinsOverProfile(t *testing.T) {
	global := Settings{Namespace: "scion", WorkspaceSize: "10Gi", SafeToEvict: bp(true), ServiceAccount: "sandbox"}
	profile := Settings{Context: "batch", Namespace: "agents", SharedDirSize: "40Gi", SafeToEvict: bp(false), GKE: bp(true)}
	agent := Settings{Namespace: "mine", GKE: bp(false), PriorityClass: "high"}
	tests := []struct {
		name   string
		layers []Settings
		want   Settings
	}{
		{"nothing set", nil, Settings{}},
		{"global only", []Settings{{}, {}, global}, global},
		{"profile over global", []Settings{{}, profile, global}, Settings{Context: "batch", Namespace: "agents",
			WorkspaceSize: "10Gi", SharedDirSize: "40Gi", SafeToEvict: bp(false), GKE: bp(true), ServiceAccount: "sandbox"}},
		// An agent's explicit false beats its profile's true: a set
		// boolean is a setting, not an absence.
		{"agent over profile over global", []Settings{agent, profile, global}, Settings{Context: "batch", Namespace: "mine",
			WorkspaceSize: "10Gi", SharedDirSize: "40Gi", SafeToEvict: bp(false), GKE: bp(false), PriorityClass: "high", ServiceAccount: "sandbox"}},
		{"agent alone", []Settings{agent}, agent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resolve(tc.layers...); !reflect.DeepEqual(got.Map(), tc.want.Map()) {
				t.Fatalf("Resolve = %v, want %v", got.Map(), tc.want.Map())
			}
		})
	}
	// Resolve copies booleans: changing the result leaves the layers be.
	got := Resolve(profile)
	*got.GKE = false
	if !*profile.GKE {
		t.Fatal("Resolve aliased a layer's boolean")
	}
}

func TestParseSettings(t *testing.T) {
	tests := []struct {
		in      map[string]string
		want    map[string]string
		wantErr string
	}{
		{in: map[string]string{"context": "batch-cluster", "namespace": "agents", "shared_dir_size": "40Gi",
			"safe_to_evict": "false", "memory": "2g"},
			want: map[string]string{"context": "batch-cluster", "namespace": "agents", "shared_dir_size": "40Gi", "safe_to_evict": "false"}},
		{in: map[string]string{"gke_mode": "yes"}, wantErr: "gke_mode"},
		{in: map[string]string{"shared_dir_size": "forty"}, wantErr: "shared_dir_size"},
		{in: map[string]string{"home_storage": "s3"}, wantErr: "home_storage"},
		{in: map[string]string{"shared_dir_storage": "nfs", "home_storage": "pvc", "priority_class": " high "},
			want: map[string]string{"shared_dir_storage": "nfs", "home_storage": "pvc", "priority_class": "high"}},
	}
	for _, tc := range tests {
		got, err := ParseSettings(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSettings(%v) error = %v, want one naming %s", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got.Map(), tc.want) {
			t.Errorf("ParseSettings(%v) = %v, %v; want %v", tc.in, got.Map(), err, tc.want)
		}
	}
}

func TestAgentSettingsFromLabels(t *testing.T) {
	s, err := agentSettings(map[string]string{"scion.k8s.namespace": "mine", "scion.k8s.safe_to_evict": "true", "scion.memory": "1g"})
	if err != nil || s.Namespace != "mine" || !isTrue(s.SafeToEvict) || s.Context != "" {
		t.Fatalf("agentSettings = %+v, %v", s, err)
	}
}

// TestCheckAgentPlacement: an agent's own context, namespace, service
// account and NFS volume must be what its profile (over the broker's
// defaults, over the built-in defaults) gives, or one the broker lists;
// its sizes and classes are its own to choose.
func TestCheckAgentPlacement(t *testing.T) {
	profile := Settings{Context: "batch", Namespace: "agents", NFSPVName: "proj-a-nfs", NFSMountPath: "/mnt/a"}
	allow := AgentChoices{Contexts: []string{"gpu"}, Namespaces: []string{"agents-gpu"}, ServiceAccounts: []string{"scion-agent-gpu"}}
	for _, tc := range []struct {
		name    string
		own     Settings
		base    Settings
		allow   AgentChoices
		refused string // the key named in the refusal; "" for allowed
		setting string // the broker setting the refusal names
	}{
		{name: "nothing of its own", base: profile},
		{name: "harmless keys", own: Settings{WorkspaceSize: "50Gi", PriorityClass: "high", SafeToEvict: bp(false),
			WorkspaceClass: "fast", HomeStorage: "pvc", GKE: bp(true)}, base: profile},
		{name: "the profile's own values", own: Settings{Context: "batch", Namespace: "agents", NFSPVName: "proj-a-nfs", NFSMountPath: "/mnt/a"}, base: profile},
		{name: "built-in default namespace and account", own: Settings{Namespace: DefaultNamespace, ServiceAccount: DefaultServiceAccount}},
		{name: "listed context", own: Settings{Context: "gpu"}, base: profile, allow: allow},
		{name: "listed namespace", own: Settings{Namespace: "agents-gpu"}, base: profile, allow: allow},
		{name: "listed account", own: Settings{ServiceAccount: "scion-agent-gpu"}, base: profile, allow: allow},
		{name: "another context", own: Settings{Context: "prod-admin"}, base: profile, allow: allow, refused: "context", setting: "agent_contexts"},
		{name: "another namespace", own: Settings{Namespace: "kube-system"}, base: profile, allow: allow, refused: "namespace", setting: "agent_namespaces"},
		{name: "another namespace, no list", own: Settings{Namespace: "agents-gpu"}, base: profile, refused: "namespace", setting: "agent_namespaces"},
		{name: "the built-in namespace when the profile has one", own: Settings{Namespace: DefaultNamespace}, base: profile, refused: "namespace", setting: "agent_namespaces"},
		{name: "another account", own: Settings{ServiceAccount: "default"}, base: profile, allow: allow, refused: "service_account", setting: "agent_service_accounts"},
		{name: "another project's volume", own: Settings{NFSPVName: "proj-b-nfs"}, base: profile, allow: allow, refused: "nfs_pv_name"},
		{name: "another mount path", own: Settings{NFSMountPath: "/"}, base: profile, refused: "nfs_mount_path"},
		{name: "a volume where the profile has none", own: Settings{NFSPVName: "proj-b-nfs", NFSMountPath: "/mnt/b"}, refused: "nfs_pv_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAgentPlacement(tc.own, tc.base, tc.allow)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := api.AsError(err)
			if err == nil || e.Status != 400 || e.Code != api.CodeInvalidRequest || e.Details["field"] != "kubernetes."+tc.refused ||
				!strings.Contains(e.Message, "setting "+tc.refused+" ") {
				t.Fatalf("err = %#v, want invalid_request naming %s", err, tc.refused)
			}
			if tc.setting != "" && (!strings.Contains(e.Message, "server.broker.kubernetes."+tc.setting) ||
				e.Details["setting"] != "server.broker.kubernetes."+tc.setting) {
				t.Errorf("message %q / details %v do not name server.broker.kubernetes.%s", e.Message, e.Details, tc.setting)
			}
		})
	}
}
