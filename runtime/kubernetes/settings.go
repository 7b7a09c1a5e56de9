package kubernetes

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
)

// Settings are the Kubernetes settings of one agent, as a profile, a flat
// instance's runtime_target, the broker's global defaults or the agent
// itself supply them. Empty strings and nil pointers mean "not set here":
// Resolve fills them from the next layer.
type Settings struct {
	// Context is the kubeconfig context (the cluster and credentials).
	Context string
	// Namespace holds the agents' pods, claims and records.
	Namespace string
	// WorkspaceClass and WorkspaceSize shape a per-agent workspace claim
	// (when the workspace is not on an NFS share).
	WorkspaceClass string
	WorkspaceSize  string
	// SharedDirClass and SharedDirSize shape the project's shared
	// directory claim (shared_dir_size).
	SharedDirClass string
	SharedDirSize  string
	// SharedDirStorage is the shared directory's backend: "" (none unless
	// SharedDirSize is set), "pvc" or "nfs".
	SharedDirStorage string
	// HomeStorage is the agent home's backend: "" or "emptydir" (the
	// pod's lifetime), "pvc" (a claim of the agent's) or "nfs".
	HomeStorage string
	HomeSize    string
	// SafeToEvict sets the cluster autoscaler's safe-to-evict annotation.
	SafeToEvict *bool
	// PriorityClass is the pods' priorityClassName.
	PriorityClass string
	// GKE turns on GKE mode: requests equal limits (Autopilot schedules
	// and bills by requests) and ephemeral storage is requested.
	GKE *bool
	// NFSPVName is nfs.shares[0].pv_name: the PersistentVolume of the NFS
	// export holding workspaces (and homes and shared directories with
	// the nfs backend). NFSMountPath is where the broker itself mounts
	// that export, so that its host paths map to sub-paths of the volume.
	NFSPVName    string
	NFSMountPath string
	NFSClaimSize string
	// ServiceAccount is the agents' sandbox ServiceAccount.
	ServiceAccount string
	// RunAsUser, RunAsGroup and FSGroup are the pod's user, group and
	// volume group (decimal IDs; see podSecurity for the defaults).
	// ReadOnlyRootFS is the containers' readOnlyRootFilesystem (default
	// true). These are the Pod Security knobs a harness may truly need
	// (a fixed UID, a writable image); everything else restricted
	// demands is not configurable.
	RunAsUser      string
	RunAsGroup     string
	FSGroup        string
	ReadOnlyRootFS *bool
}

// Settings keys, as in a profile's settings map, a runtime_target, and
// (prefixed with AgentSettingPrefix) an agent's own Spec.Labels.
var settingKeys = map[string]func(*Settings) *string{
	"context":            func(s *Settings) *string { return &s.Context },
	"namespace":          func(s *Settings) *string { return &s.Namespace },
	"workspace_class":    func(s *Settings) *string { return &s.WorkspaceClass },
	"workspace_size":     func(s *Settings) *string { return &s.WorkspaceSize },
	"shared_dir_class":   func(s *Settings) *string { return &s.SharedDirClass },
	"shared_dir_size":    func(s *Settings) *string { return &s.SharedDirSize },
	"shared_dir_storage": func(s *Settings) *string { return &s.SharedDirStorage },
	"home_storage":       func(s *Settings) *string { return &s.HomeStorage },
	"home_size":          func(s *Settings) *string { return &s.HomeSize },
	"priority_class":     func(s *Settings) *string { return &s.PriorityClass },
	"nfs_pv_name":        func(s *Settings) *string { return &s.NFSPVName },
	"nfs_mount_path":     func(s *Settings) *string { return &s.NFSMountPath },
	"nfs_claim_size":     func(s *Settings) *string { return &s.NFSClaimSize },
	"service_account":    func(s *Settings) *string { return &s.ServiceAccount },
	"run_as_user":        func(s *Settings) *string { return &s.RunAsUser },
	"run_as_group":       func(s *Settings) *string { return &s.RunAsGroup },
	"fs_group":           func(s *Settings) *string { return &s.FSGroup },
}

var boolKeys = map[string]func(*Settings) **bool{
	"safe_to_evict":             func(s *Settings) **bool { return &s.SafeToEvict },
	"gke_mode":                  func(s *Settings) **bool { return &s.GKE },
	"read_only_root_filesystem": func(s *Settings) **bool { return &s.ReadOnlyRootFS },
}

// operatorKeys are the settings an agent's own layer may not set: they
// decide how far the pod is confined, which is the operator's call (a
// profile or the broker's defaults), not that of whoever creates agents.
var operatorKeys = map[string]bool{
	"run_as_user": true, "run_as_group": true, "fs_group": true, "read_only_root_filesystem": true,
}

// AgentChoices are the values, beyond what its profile (over the broker's
// defaults) gives, that an agent's own settings may choose for the keys
// that decide where it runs and as whom: server.broker.kubernetes's
// agent_contexts, agent_namespaces and agent_service_accounts. Empty
// lists allow nothing but the profile's values.
type AgentChoices struct {
	Contexts        []string
	Namespaces      []string
	ServiceAccounts []string
}

// placementKeys are the settings that name a cluster object outside the
// agent's own: the kubeconfig context (another cluster, other
// credentials of the broker's), the namespace, the ServiceAccount (an
// identity with whatever it is bound to) and the NFS volume with the
// path it maps (another project's files). Whoever may create an agent is
// not thereby allowed to pick among the broker's clusters, identities or
// volumes, so an agent's own value must be its profile's or one the
// broker lists under allow (no list for the NFS pair: a profile chooses
// the share). The other keys (sizes, classes, priority class, eviction,
// storage backends over the profile's share) stay an agent's to set.
var placementKeys = []struct {
	key   string
	allow string // the broker setting listing further values; "" for none
	list  func(AgentChoices) []string
	def   string // the built-in default when no layer sets the key
}{
	{"context", "agent_contexts", func(a AgentChoices) []string { return a.Contexts }, ""},
	{"namespace", "agent_namespaces", func(a AgentChoices) []string { return a.Namespaces }, DefaultNamespace},
	{"service_account", "agent_service_accounts", func(a AgentChoices) []string { return a.ServiceAccounts }, DefaultServiceAccount},
	{"nfs_pv_name", "", nil, ""},
	{"nfs_mount_path", "", nil, ""},
}

// checkAgentPlacement decides whether an agent's own settings (own) may
// choose what they do, given base, what the agent gets without them (its
// profile's layer resolved over the broker's defaults). A refusal is an
// invalid_request naming the key and the broker setting that would allow
// the value; it comes before anything is created.
func checkAgentPlacement(own, base Settings, allow AgentChoices) error {
	for _, p := range placementKeys {
		v := *settingKeys[p.key](&own)
		if v == "" || v == cmp.Or(*settingKeys[p.key](&base), p.def) {
			continue
		}
		if p.list != nil && slices.Contains(p.list(allow), v) {
			continue
		}
		if p.allow == "" {
			return api.BadRequest("kubernetes setting %s %s is not this agent's profile's: only a profile or server.broker.kubernetes.defaults chooses it",
				p.key, api.Quote(v)).WithDetail("field", "kubernetes."+p.key)
		}
		return api.BadRequest("kubernetes setting %s %s is not one an agent may choose on this broker: leave it to the profile, or list it in server.broker.kubernetes.%s",
			p.key, api.Quote(v), p.allow).WithDetail("field", "kubernetes."+p.key).WithDetail("setting", "server.broker.kubernetes."+p.allow)
	}
	return nil
}

// AgentSettingPrefix marks an agent's own Kubernetes settings in
// Spec.Labels: "scion.k8s.namespace" is the agent's namespace setting.
const AgentSettingPrefix = runtime.LabelKubernetesSetting

// ParseSettings reads the Kubernetes keys of m (a profile's settings map);
// other keys (memory, cpus, ...) belong to others and are ignored. A bad
// value is an error naming the key.
func ParseSettings(m map[string]string) (Settings, error) {
	var s Settings
	for k, v := range m {
		if f, ok := settingKeys[k]; ok {
			*f(&s) = strings.TrimSpace(v)
			continue
		}
		if f, ok := boolKeys[k]; ok {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return Settings{}, fmt.Errorf("kubernetes setting %s: %q is not true or false", k, v)
			}
			*f(&s) = &b
		}
	}
	return s, s.validate()
}

// agentSettings reads an agent's own settings from its spec labels.
func agentSettings(labels map[string]string) (Settings, error) {
	m := map[string]string{}
	for k, v := range labels {
		if key, ok := strings.CutPrefix(k, AgentSettingPrefix); ok {
			if operatorKeys[key] {
				return Settings{}, fmt.Errorf("kubernetes setting %s is set in a profile or the broker's defaults, not by an agent", key)
			}
			m[key] = v
		}
	}
	return ParseSettings(m)
}

// validate checks the values a typo would otherwise turn into an API
// server rejection much later (or, for storage backends, silently into
// the default).
func (s Settings) validate() error {
	for key, v := range map[string]string{"workspace_size": s.WorkspaceSize, "shared_dir_size": s.SharedDirSize,
		"home_size": s.HomeSize, "nfs_claim_size": s.NFSClaimSize} {
		if v == "" {
			continue
		}
		if _, err := resource.ParseQuantity(v); err != nil {
			return fmt.Errorf("kubernetes setting %s: %q is not a quantity like 10Gi", key, v)
		}
	}
	for key, v := range map[string]string{"run_as_user": s.RunAsUser, "run_as_group": s.RunAsGroup, "fs_group": s.FSGroup} {
		if v == "" {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n > math.MaxInt32 {
			return fmt.Errorf("kubernetes setting %s: %q is not a numeric ID such as 65532", key, v)
		}
	}
	switch s.SharedDirStorage {
	case "", "pvc", "nfs":
	default:
		return fmt.Errorf("kubernetes setting shared_dir_storage: %q: use pvc or nfs", s.SharedDirStorage)
	}
	switch s.HomeStorage {
	case "", "emptydir", "pvc", "nfs":
	default:
		return fmt.Errorf("kubernetes setting home_storage: %q: use emptydir, pvc or nfs", s.HomeStorage)
	}
	return nil
}

// Resolve merges settings layers, most specific first: for each field the
// first layer that sets it wins. Call it as Resolve(agent, profile or
// runtime target, global): an agent's own setting beats its profile's,
// which beats the broker-wide default.
func Resolve(layers ...Settings) Settings {
	var out Settings
	for _, f := range settingKeys {
		dst := f(&out)
		for i := range layers {
			if v := *f(&layers[i]); v != "" {
				*dst = v
				break
			}
		}
	}
	for _, f := range boolKeys {
		dst := f(&out)
		for i := range layers {
			if v := *f(&layers[i]); v != nil {
				b := *v
				*dst = &b
				break
			}
		}
	}
	return out
}

// Defaults of settings no layer sets.
const (
	DefaultNamespace      = "default"
	DefaultServiceAccount = "scion-agent-sandbox"
	defaultWorkspaceSize  = "10Gi"
	defaultSharedDirSize  = "10Gi"
	defaultHomeSize       = "1Gi"
	defaultNFSClaimSize   = "1Gi"
)

// Map is the inverse of ParseSettings: the keys that are set, for
// recording and display.
func (s Settings) Map() map[string]string {
	m := map[string]string{}
	for k, f := range settingKeys {
		if v := *f(&s); v != "" {
			m[k] = v
		}
	}
	for k, f := range boolKeys {
		if v := *f(&s); v != nil {
			m[k] = strconv.FormatBool(*v)
		}
	}
	return m
}

func isTrue(b *bool) bool { return b != nil && *b }
