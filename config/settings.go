package config

import (
	"errors"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Settings is settings.yaml. Unknown keys are kept on save.
type Settings struct {
	Server ServerSettings `yaml:"server"`
	Extra  map[string]any `yaml:",inline"`
	// Warnings name the keys of our sections that nothing reads (typos),
	// each with the nearest known key; commands that start a Hub or a
	// broker print them. Never saved.
	Warnings []string `yaml:"-"`
}

// ServerSettings is the server: section.
type ServerSettings struct {
	Broker BrokerSettings `yaml:"broker"`
	Hub    HubSettings    `yaml:"hub,omitempty"`
	// WorkspaceStorage is where this host's broker keeps agents'
	// workspaces (see storage.go).
	WorkspaceStorage WorkspaceStorageSettings `yaml:"workspace_storage,omitempty"`
	// SharedDirStorage is where this host's broker keeps projects' shared
	// directories: local (the default, per broker) or nfs, the same
	// directory for every broker of the export (see storage.go).
	SharedDirStorage WorkspaceStorageSettings `yaml:"shared_dir_storage,omitempty"`
	Extra            map[string]any           `yaml:",inline"`
}

// BrokerSettings is server.broker.
type BrokerSettings struct {
	// HubEndpoint is the Hub the broker process connects to.
	HubEndpoint string `yaml:"hub_endpoint,omitempty"`
	// AgentHubEndpoint is the Hub address given to agents
	// (SCION_HUB_ENDPOINT) when the one the broker dials is not one they
	// can reach: a loopback Hub seen from a Kubernetes pod. Default: the
	// broker's hub_endpoint (on Docker, a loopback one through a forwarder
	// on the agent network's gateway).
	AgentHubEndpoint string `yaml:"agent_hub_endpoint,omitempty"`
	// BrokerID is the broker's registration when it is kept in the global
	// settings rather than in broker-credentials.yaml.
	BrokerID string `yaml:"broker_id,omitempty"`
	// Name is the broker's name (default: the host name).
	Name string `yaml:"name,omitempty"`
	// Runtime is the runtime to use: process, docker, fake.
	Runtime string `yaml:"runtime,omitempty"`
	// DataDir holds broker-local agent state (default <home>/broker).
	DataDir string `yaml:"data_dir,omitempty"`
	// Profiles are the Runtime Broker Profiles this broker offers: named
	// runtime settings, one of them the default.
	Profiles []ProfileSettings `yaml:"profiles,omitempty"`
	// AllowPassthrough lists the passthrough identity kinds ("gcp") this
	// broker accepts agents with; the broker reports each as a capability
	// (passthrough:gcp) and the Hub places such agents only here.
	AllowPassthrough []string `yaml:"allow_passthrough,omitempty"`
	// AllowLocalGitRemotes are the directories under which a path on the
	// broker's host (or a file:// URL) may be a project's git remote (see
	// LocalGitRemotes): none on a team broker unless set, the user's home
	// on a workstation; never the Scion home or the data directory.
	AllowLocalGitRemotes *LocalGitRemotes `yaml:"allow_local_git_remotes,omitempty"`
	// Instances are the flat Runtime Broker instances this process hosts
	// instead of a regular broker (see instances.go); Parse them.
	Instances InstanceList   `yaml:"instances,omitempty"`
	Extra     map[string]any `yaml:",inline"`
}

// ProfileSettings is one entry of server.broker.profiles.
type ProfileSettings struct {
	Name     string            `yaml:"name"`
	Runtime  string            `yaml:"runtime,omitempty"`
	Default  bool              `yaml:"default,omitempty"`
	Settings map[string]string `yaml:"settings,omitempty"`
	// Jobs is where this profile's delegated Jobs run (ADR-0046): no
	// cluster means the broker's own ambient cluster.
	Jobs *ProfileJobs `yaml:"jobs,omitempty"`
	// Clusters override or add blocks of the fleet file (clusters.toml
	// beside settings.yaml), whole blocks, the profile winning; the
	// fields are the fleet file's (spoke/fleet validates them).
	Clusters map[string]ClusterSettings `yaml:"clusters,omitempty"`
}

// ProfileJobs is a profile's jobs: section.
type ProfileJobs struct {
	Cluster string `yaml:"cluster,omitempty"`
}

// ClusterSettings is one spoke cluster block, as in clusters.toml.
type ClusterSettings struct {
	KubeconfigSecret string            `yaml:"kubeconfig_secret,omitempty"`
	HostAliases      map[string]string `yaml:"host_aliases,omitempty"`
	ProxyURL         string            `yaml:"proxy_url,omitempty"`
	Namespace        string            `yaml:"namespace,omitempty"`
	Queue            string            `yaml:"queue,omitempty"`
	// ConnectTimeout and RequestTimeout ("5s"), as in clusters.toml.
	ConnectTimeout string `yaml:"connect_timeout,omitempty"`
	RequestTimeout string `yaml:"request_timeout,omitempty"`
	StatusRetry    string `yaml:"status_retry,omitempty"`
	// RunAsUser and RunAsGroup: the Job pods' IDs, as in clusters.toml.
	RunAsUser  *int64           `yaml:"run_as_user,omitempty"`
	RunAsGroup *int64           `yaml:"run_as_group,omitempty"`
	Bastion    *BastionSettings `yaml:"bastion,omitempty"`
}

// BastionSettings is a cluster block's bastion: the SSH tier.
type BastionSettings struct {
	Host       string `yaml:"host,omitempty"`
	User       string `yaml:"user,omitempty"`
	KeySecret  string `yaml:"key_secret,omitempty"`
	KnownHosts string `yaml:"known_hosts,omitempty"`
	// KeepaliveInterval ("15s") and KeepaliveMax, as in clusters.toml.
	KeepaliveInterval string `yaml:"keepalive_interval,omitempty"`
	KeepaliveMax      int    `yaml:"keepalive_max,omitempty"`
}

// HubSettings is server.hub.
type HubSettings struct {
	Listen string         `yaml:"listen,omitempty"`
	DB     string         `yaml:"db,omitempty"`
	OIDC   *OIDCSettings  `yaml:"oidc,omitempty"`
	TLS    *HubTLS        `yaml:"tls,omitempty"`
	Extra  map[string]any `yaml:",inline"`
}

// HubTLS is server.hub.tls: the Hub serves HTTPS with this certificate
// and key (PEM files, reloaded when they change). The --tls-cert and
// --tls-key flags override each key.
type HubTLS struct {
	CertFile string         `yaml:"cert_file,omitempty"`
	KeyFile  string         `yaml:"key_file,omitempty"`
	Extra    map[string]any `yaml:",inline"`
}

// OIDCSettings is server.hub.oidc: user sign-in through an OIDC provider
// (the scion server start --oidc-* flags override each key). The client
// secret is read from a file, never kept in settings.yaml.
type OIDCSettings struct {
	Issuer           string         `yaml:"issuer,omitempty"`
	ClientID         string         `yaml:"client_id,omitempty"`
	ClientSecretFile string         `yaml:"client_secret_file,omitempty"`
	DefaultRole      string         `yaml:"default_role,omitempty"`
	AdminEmails      []string       `yaml:"admin_emails,omitempty"`
	Extra            map[string]any `yaml:",inline"`
}

// SettingsPath is the global settings file.
func SettingsPath() string { return Path("settings.yaml") }

// LoadSettings reads settings.yaml; a missing file gives empty settings.
func LoadSettings() (*Settings, error) {
	s := &Settings{}
	b, err := os.ReadFile(SettingsPath())
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("config: %s: %w", SettingsPath(), err)
	}
	s.Warnings = UnknownKeys(b)
	return s, nil
}

// Save writes settings.yaml.
func (s *Settings) Save() error {
	b, err := yaml.Marshal(s)
	if err != nil {
		return err
	}
	return WriteFileAtomic(SettingsPath(), b, 0o600)
}
