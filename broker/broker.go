// Package broker is the Runtime Broker daemon: it keeps one control channel
// (a WebSocket) to its Hub, answers the Hub's lifecycle commands by driving
// a runtime.Runtime, and reports what the runtime observes back to the Hub.
//
// The broker dials the Hub, never the other way round, so it works behind
// NAT. Each connection starts with a hello that carries the broker's
// inventory, which lets the Hub reconcile whatever changed while the channel
// was down. Agents outlive the broker process: stopping the broker closes
// the channel and leaves the containers running.
package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/idempotency"
	"github.com/scion-go/scion/broker/portpool"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// Config configures a Broker. HubEndpoint, BrokerID, Secret, Runtime and
// DataDir are required; zero values of the rest mean the defaults.
type Config struct {
	// HubEndpoint is the Hub's base URL (http, https, ws or wss).
	HubEndpoint    string
	BrokerID, Name string
	// Secret is the HMAC key from register/join that signs the upgrade.
	Secret       []byte
	Runtime      runtime.Runtime
	DataDir      string
	Version      string
	Capabilities []string
	Profiles     []wire.Profile
	// RuntimeTarget makes the broker a flat Runtime Broker instance
	// serving that one target, resolved (see flat.go): its hello reports
	// it and no profiles, so Profiles must be empty. InstanceKey is the
	// instance's key in server.broker.instances, for its log lines, and
	// AgentDefaults its agent_defaults that the broker applies.
	RuntimeTarget *api.RuntimeTarget
	InstanceKey   string
	AgentDefaults AgentDefaults
	// RefusedBackoff is a flat instance's delay between attempts while
	// the Hub refuses it (not activated: the experiment is off, its
	// credentials are revoked): jittered over [RefusedBackoff/2,
	// RefusedBackoff), default 30s, so that turning the experiment on
	// activates the instance without a restart.
	RefusedBackoff time.Duration
	Logger         *slog.Logger
	// HeartbeatInterval and Grace tune the channel's dead-peer detection
	// (defaults: those of wire.Options).
	HeartbeatInterval, Grace time.Duration
	// MinBackoff and MaxBackoff bound the reconnect delay (100ms, 10s).
	MinBackoff, MaxBackoff time.Duration
	// StopGrace is the stop grace period when a command gives none (10s).
	StopGrace  time.Duration
	HTTPClient *http.Client
	// AgentHubCA is the PEM file of the CA that signed the Hub's TLS
	// certificate ("": none): agents get it as SCION_HUB_CA, mounted
	// read-only at HubCAPath in a container, so that the scion CLI
	// inside them trusts the Hub as the broker does.
	AgentHubCA string
	// SharedDirs is the export that holds projects' shared directories
	// (server.shared_dir_storage on nfs); nil keeps them in the broker's
	// data directory (see shared_dir.go).
	SharedDirs *workspace.Export
	// HubConnections is how many Hubs the broker's process serves, one
	// Broker each (launch): with more than one, agents of a Hub's global
	// project are refused (409 global_project_disabled).
	HubConnections int
	// AgentHubEndpoint, when set, is the Hub address given to agents
	// instead of the one the Hub announces (a loopback Hub is reached from
	// containers through a forwarder on their network's gateway).
	AgentHubEndpoint string
	// ScionBinary is the path of the static scion binary exposed to agents;
	// its directory is put first on their PATH. Optional.
	ScionBinary string
	// Workspaces provides agent workspaces (default: GitWorkspaces, per the
	// project's sharing mode, configured by GitWorkspaces).
	Workspaces Workspaces
	// GitWorkspaces configures the default Workspaces (clone depth, git
	// binary); it is ignored when Workspaces is set.
	GitWorkspaces workspace.GitConfig
	// Idempotency remembers completed keyed commands (default: a
	// FileStore under DataDir/idempotency, so that a replay after a broker
	// restart is still answered from the record).
	Idempotency idempotency.Store
	// DropReply is fault injection for tests: when it returns true for a
	// keyed command that has completed (and been recorded), the broker
	// closes the control channel instead of answering, the way a network
	// failure loses an acknowledgement. Leave nil in production.
	DropReply func(method, key string) bool
	// DefaultImage is the image of an agent for which neither its create,
	// the Hub's Agent Defaults nor its harness names one: on a Docker
	// broker, the locally built demo image (scion image build-demo), so
	// that a team set-up runs its first agent without a registry, as the
	// workstation does. Empty: such a create is refused with the fix.
	DefaultImage string
	// Jobs configures delegated Jobs (ADR-0046); its zero value runs none.
	Jobs JobsConfig
	// PortRange is the inclusive host port range agents' published ports
	// come from (default DefaultPortRange). Best reserved for this
	// broker's agents on its host; brokers sharing a Docker Engine pass
	// over each other's ports (see agent_ports.go).
	PortRange [2]int
}

// Status is a snapshot of the broker's connection to its Hub.
type Status struct {
	Connected   bool
	SessionID   string
	HubEndpoint string
	// LastConnect is when the last hello was accepted.
	LastConnect time.Time
	// Reconnects counts the sessions established after the first one.
	Reconnects int
	// LastError is why the last dial, hello or session failed.
	LastError string
	// Refused is set while the Hub refuses a flat instance ("code:
	// message" of the refusal: the instance is not activated).
	Refused string
}

// Broker is a Runtime Broker. Create it with New and run it with Run.
type Broker struct {
	// placements are where this process made agents' workspaces
	// (placement), by agent ID; a deleted agent's is dropped.
	placements sync.Map
	cfg        Config
	log        *slog.Logger
	rt         runtime.Runtime
	url        string // the control channel's WebSocket URL
	layout     workspace.Layout
	ws         Workspaces
	dedup      *idempotency.Dedup
	ownIdem    io.Closer // the default idempotency store, closed when Run ends
	locks      agentLocks
	attach     attachSessions
	running    atomic.Bool

	ports       *portpool.Pool
	portsMu     sync.Mutex // guards portsLoaded and serialises loadPorts
	portsLoaded bool

	jobs        *jobsState      // nil: no delegated Jobs
	runCtx      context.Context // Run's: ends the Jobs' goroutines
	jobsStarted sync.Once

	later sync.WaitGroup // reportLater's goroutines; Run waits for them

	mu         sync.Mutex
	reportsDue map[string]bool // agents with a reportLater pending
	conn       *wire.Conn      // the current session's channel once hello succeeded
	status     Status
	changed    chan struct{} // closed and replaced on every status change
}

// New checks cfg, fills in defaults and creates the data directory.
func New(cfg Config) (*Broker, error) {
	switch {
	case cfg.BrokerID == "":
		return nil, errors.New("broker: BrokerID is required")
	case len(cfg.Secret) == 0:
		return nil, errors.New("broker: Secret is required")
	case cfg.Runtime == nil:
		return nil, errors.New("broker: Runtime is required")
	case cfg.DataDir == "":
		return nil, errors.New("broker: DataDir is required")
	}
	if err := cfg.flatErr(); err != nil {
		return nil, err
	}
	u, err := connectURL(cfg.HubEndpoint)
	if err != nil {
		return nil, err
	}
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("broker: data dir: %w", err)
	}
	// Fail at start-up, not at the first create, if it cannot be made.
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: data dir: %w", err)
	}
	if cfg.ScionBinary != "" {
		if cfg.ScionBinary, err = filepath.Abs(cfg.ScionBinary); err != nil {
			return nil, fmt.Errorf("broker: scion binary: %w", err)
		}
	}
	if cfg.Name == "" {
		cfg.Name = cfg.BrokerID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// A spoke's or git's error text may quote a URL with its password:
	// no broker line carries one, whoever embeds the broker.
	cfg.Logger = slog.New(api.RedactHandler(cfg.Logger.Handler()))
	cfg.MinBackoff = cmp.Or(cfg.MinBackoff, 100*time.Millisecond)
	cfg.MaxBackoff = max(cmp.Or(cfg.MaxBackoff, 10*time.Second), cfg.MinBackoff)
	cfg.StopGrace = cmp.Or(cfg.StopGrace, 10*time.Second)
	cfg.RefusedBackoff = cmp.Or(cfg.RefusedBackoff, 30*time.Second)
	cfg.Capabilities = slices.Clone(cfg.Capabilities)
	for _, c := range []string{wire.CapLogsFollow, wire.CapAgentMove} {
		if !slices.Contains(cfg.Capabilities, c) {
			cfg.Capabilities = append(cfg.Capabilities, c)
		}
	}
	if _, ok := cfg.Runtime.(runtime.Execer); ok && !slices.Contains(cfg.Capabilities, wire.CapExec) {
		cfg.Capabilities = append(cfg.Capabilities, wire.CapExec)
	}
	if _, ok := cfg.Runtime.(runtime.Attacher); ok && !slices.Contains(cfg.Capabilities, wire.CapAttach) {
		cfg.Capabilities = append(cfg.Capabilities, wire.CapAttach)
	}
	if w := config.AgentHubWarning(cfg.Runtime.Name(), cmp.Or(cfg.AgentHubEndpoint, cfg.HubEndpoint)); w != "" {
		cfg.Logger.Warn(w, "agent_hub_endpoint", cmp.Or(cfg.AgentHubEndpoint, cfg.HubEndpoint), "setting", config.AgentHubSetting)
	}
	if _, ok := cfg.Runtime.(runtime.ProjectCleaner); ok && !slices.Contains(cfg.Capabilities, wire.CapProjectCleanup) {
		cfg.Capabilities = append(cfg.Capabilities, wire.CapProjectCleanup)
	}
	js, err := newJobsState(cfg.Jobs, cfg.DataDir, cfg.Logger.With("broker_id", cfg.BrokerID))
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if js != nil && !slices.Contains(cfg.Capabilities, wire.CapJobs) {
		cfg.Capabilities = append(cfg.Capabilities, wire.CapJobs)
	}
	l := workspace.Layout{Root: cfg.DataDir}
	if cfg.Workspaces == nil {
		cfg.GitWorkspaces.CloneDepth = cmp.Or(cfg.GitWorkspaces.CloneDepth, cfg.AgentDefaults.CloneDepth)
		cfg.GitWorkspaces.Logger = cmp.Or(cfg.GitWorkspaces.Logger, cfg.Logger)
		if cfg.Workspaces, err = workspace.NewGit(cfg.DataDir, cfg.GitWorkspaces); err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
	}
	var ownIdem io.Closer
	if cfg.Idempotency == nil {
		fs, err := idempotency.NewFileStore(filepath.Join(cfg.DataDir, "idempotency"), idempotency.FileOptions{Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		cfg.Idempotency, ownIdem = fs, fs
	}
	if cfg.PortRange == [2]int{} {
		cfg.PortRange = DefaultPortRange
	}
	ports, err := portpool.New(cfg.Name, cfg.PortRange[0], cfg.PortRange[1])
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if cfg.Runtime.Name() == "docker" {
		// Published ports bind real host ports, which another broker on
		// this host or any other program may hold.
		ports.CheckHost(portpool.HostBusy)
	}
	return &Broker{
		ports:   ports,
		jobs:    js,
		cfg:     cfg,
		log:     brokerLogger(cfg),
		rt:      cfg.Runtime,
		url:     u,
		layout:  l,
		ws:      cfg.Workspaces,
		dedup:   idempotency.NewDedup(cfg.Idempotency),
		ownIdem: ownIdem,
		status:  Status{HubEndpoint: cfg.HubEndpoint},
		changed: make(chan struct{}),
	}, nil
}

// Run keeps the control channel up until ctx ends, then closes it and
// returns nil. It does not stop agents: they outlive the broker process,
// and the next hello reports them. Run may be called once.
func (b *Broker) Run(ctx context.Context) error {
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("broker: Run called twice")
	}
	// Warm the port pool before the first command; a failure is retried
	// by the first command that needs the pool.
	lctx, cancel := context.WithTimeout(ctx, helloTimeout)
	if err := b.loadPorts(lctx); err != nil {
		b.log.Warn("port pool", "err", err)
	}
	cancel()
	if b.ownIdem != nil {
		defer b.ownIdem.Close()
	}
	b.runCtx = ctx
	var wg sync.WaitGroup
	wg.Go(func() { b.forwardEvents(ctx) })
	defer wg.Wait()
	defer b.later.Wait()
	if js := b.jobs; js != nil {
		wg.Go(func() { b.sendUpdates(ctx) })
		defer js.cfg.Spokes.Close()
		defer js.stop()
	}
	b.connectLoop(ctx)
	return nil
}

// Status returns a snapshot of the connection state.
func (b *Broker) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status
}

// WaitConnected blocks until the broker has a session with the Hub (its
// hello was accepted) or ctx ends.
func (b *Broker) WaitConnected(ctx context.Context) error {
	return b.waitStatus(ctx, func(s Status) bool { return s.Connected })
}

// waitStatus blocks until cond holds for the status or ctx ends.
func (b *Broker) waitStatus(ctx context.Context, cond func(Status) bool) error {
	for {
		b.mu.Lock()
		ok, ch := cond(b.status), b.changed
		b.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// update runs f (which changes b.status or b.conn) under the lock and
// wakes the waiters.
func (b *Broker) update(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f()
	close(b.changed)
	b.changed = make(chan struct{})
}

// currentConn is the channel of the live session, or nil.
func (b *Broker) currentConn() *wire.Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conn
}

// brokerLogger is the broker's logger: its lines name its ID, and a flat
// instance's also its key.
func brokerLogger(cfg Config) *slog.Logger {
	l := cfg.Logger.With("broker_id", cfg.BrokerID)
	if cfg.InstanceKey != "" {
		l = l.With("instance", cfg.InstanceKey)
	}
	return l
}
