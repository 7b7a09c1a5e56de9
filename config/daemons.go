package config

import "time"

// The options of the daemons the scion binary runs. Package cli parses
// the flags of `scion server start` and `scion runtime-broker start` into
// them and package launch starts a Hub or a broker from them, so that the
// CLI does not import the Hub, the stores or the runtimes (cmd/scion hands
// launch's entry points to the CLI). They are the flags' values, before
// settings.yaml is merged in: a zero field means "the setting, else the
// default".

// DefaultHubListen is where a Hub listens when neither --listen nor
// server.hub.listen says otherwise.
const DefaultHubListen = "127.0.0.1:8780"

// Log formats of --log-format.
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// ServerOptions are the flags of `scion server start`.
type ServerOptions struct {
	// Workstation runs a local broker beside the Hub, on loopback; else
	// the Hub runs alone (--enable-hub).
	Workstation bool
	// Listen and DB are --listen and --db; "" takes server.hub.listen and
	// server.hub.db, else DefaultHubListen and <scion home>/hub.db.
	Listen, DB string
	// Runtime is the workstation broker's runtime ("" picks one).
	Runtime           string
	HeartbeatInterval time.Duration
	HeartbeatGrace    time.Duration
	LogLevel          string
	// LogFormat is --log-format: LogFormatText or LogFormatJSON.
	LogFormat string
	// NoAccessLog is --access-log=false: no line per request.
	NoAccessLog bool
	// OIDC holds the --oidc-* flags; each non-empty field overrides its
	// server.hub.oidc key.
	OIDC OIDCSettings
	// TLSCert and TLSKey are --tls-cert and --tls-key; each non-empty one
	// overrides its server.hub.tls key.
	TLSCert, TLSKey string
	// SecretsKeyFile is --secrets-key-file ("": <scion home>/hub-secrets.key).
	SecretsKeyFile string
	AgentTokenTTL  time.Duration
	Limits         ServeLimits
	// Version is the binary's version, reported by the Hub and its broker.
	Version string
}

// ServeLimits are the Hub's HTTP server limits (--read-timeout and the
// other connection flags); DefaultServeLimits are the flags' defaults.
type ServeLimits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConnsPerAddr and MaxConnsPerCaller are 0 for no cap. MaxConns is
	// lowered to fit the process's file descriptor limit.
	MaxConnsPerAddr, MaxConns, MaxConnsPerCaller int
	// BodyStall (--read-body-timeout) and BodyMinRate
	// (--read-body-min-rate, bytes/s, 0 for none) bound how slowly a
	// request body may arrive.
	BodyStall   time.Duration
	BodyMinRate int64
}

// DefaultServeLimits are the defaults of the Hub's connection flags.
func DefaultServeLimits() ServeLimits {
	return ServeLimits{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxConnsPerAddr:   256,
		MaxConns:          8192,
		MaxConnsPerCaller: 64,
		BodyStall:         10 * time.Second,
		BodyMinRate:       1024,
	}
}

// BrokerOptions are the flags of `scion runtime-broker start`.
type BrokerOptions struct {
	// Runtime "" takes server.broker.runtime, else picks one.
	Runtime  string
	LogLevel string
	// LogFormat is --log-format: LogFormatText or LogFormatJSON.
	LogFormat string
	// HeartbeatInterval and HeartbeatGrace are 0 for the broker's defaults.
	HeartbeatInterval, HeartbeatGrace time.Duration
	// PortRange is the first and last host port of agents' published
	// ports; zero for the broker's default.
	PortRange [2]int
	// Clusters is --clusters: the fleet file of delegated Jobs instead of
	// clusters.toml beside settings.yaml.
	Clusters string
	Version  string
}

// Names the CLI shows that belong to the runtimes (package launch tests
// that they match runtime/docker and runtime/kubernetes).
const (
	// DockerAgentNetwork is the Docker network a broker puts its agents
	// on when its Hub is on loopback (runtime/docker.AgentNetwork).
	DockerAgentNetwork = "scion-agents"
	// DefaultKubernetesNamespace is the namespace of an agent's pod when
	// no setting names one (runtime/kubernetes.DefaultNamespace).
	DefaultKubernetesNamespace = "default"
)
