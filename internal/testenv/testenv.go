// Package testenv starts a real Hub (SQLite or PostgreSQL) and N Runtime
// Brokers with the fake runtime, in process, on loopback, over the real
// WebSocket control channel. Tests wait on conditions with
// wait.Eventually, never on sleeps.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/hub/signin"
	"github.com/scion-go/scion/hub/transport"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/postgres"
	"github.com/scion-go/scion/store/sqlite"
	"github.com/scion-go/scion/store/storetest"
	"github.com/scion-go/scion/wire"
)

// Options shape an Env.
type Options struct {
	// Postgres runs the Hub on a fresh PostgreSQL database (the test fails
	// under CI=true when no server is configured, skips otherwise).
	Postgres bool
	// Brokers is how many brokers to start, named b1..bN, each providing
	// for the "default" project.
	Brokers int
	// HeartbeatInterval and Grace of the channel (defaults 200ms and 2s:
	// a silent broker is offline within 2.2 s, and a loaded CI machine's
	// scheduling pauses, which passed 600 ms there and flapped brokers
	// offline mid-test, do not; tests of liveness timing set their own).
	HeartbeatInterval, Grace time.Duration
	// Verbose sends Hub and broker logs to stderr.
	Verbose bool
	// Profiles are the Runtime Broker Profiles each broker offers, by
	// broker name.
	Profiles map[string][]wire.Profile
	// MinBackoff and MaxBackoff bound the brokers' reconnect delay
	// (defaults: the broker's 100ms, and 1s).
	MinBackoff, MaxBackoff time.Duration
	// DispatchTimeout bounds one Hub-to-broker command (default 10s).
	DispatchTimeout time.Duration
	// DropReply is the brokers' fault injection (broker.Config.DropReply),
	// with the broker's name.
	DropReply func(broker, method, key string) bool
	// OIDC turns on the Hub's OIDC sign-in (see internal/testenv/oidcprovider).
	OIDC *signin.Config
	// RuntimeNames is the runtime each broker reports to the Hub, by
	// broker name: its fake runtime under another name ("kubernetes", for
	// what the CLI shows of a Kubernetes broker). Default "fake".
	RuntimeNames map[string]string
	// ProjectResources makes brokers' runtimes keep resources for every
	// project beyond its agents, as the Kubernetes runtime keeps a
	// project's workspace claims: by broker name, what the runtime removes
	// (and reports) at a project's cleanup. A broker named here (or in
	// ProjectCleanupErr) reports project-cleanup.
	ProjectResources map[string][]string
	// ProjectCleanupErr fails the project cleanup of brokers' runtimes, by
	// broker name.
	ProjectCleanupErr map[string]error
	// Exports are the workspace exports the brokers mount, by broker name:
	// where each finds the share's subpath_root (server.workspace_storage
	// nfs; tests bind-mount one directory at several such places). Such a
	// broker takes the test repositories (gitrepo) as git remotes.
	Exports map[string]string
	// Capabilities are extra capabilities each broker reports, by broker
	// name (passthrough:gcp, say).
	Capabilities map[string][]string
	// Serve, when set, serves the Hub as `scion server start` does: with
	// these timeouts and connection caps (transport.NewHTTPServer).
	Serve *transport.ServeLimits
	// RateLimits of the Hub. Nil is limits so high that tests which walk
	// every route with bad credentials from one address see their 401s;
	// a test of the limits passes identity.DefaultRateLimits().
	RateLimits *hub.RateLimits
	// AgentTokenTTL is the lifetime of agent tokens (the Hub's default
	// when 0).
	AgentTokenTTL time.Duration
	// Now is the Hub's clock (hub.Options.Now; nil: time.Now): a test of a
	// lifetime or a window passes a fakeclock's Now and advances it. The
	// brokers keep the real clock, so keep the advance inside the Hub's
	// signature window (5 minutes) where brokers still sign requests.
	Now func() time.Time
	// LogTo receives every Hub and broker log line (at debug level), for
	// tests that read the logs (a scan for secrets, say).
	LogTo io.Writer
	// WrapStore, when set, wraps the store the Hub runs on (and Env.Store
	// is the wrapper): a test injects what another Hub over the same
	// database would make the store answer.
	WrapStore func(store.Store) store.Store
	// Jobs gives every broker delegated Jobs (broker.Config.Jobs) on
	// spoke clusters faked in memory: Broker.Spoke is what the broker
	// submits there, and how a test makes a Job progress and end (see
	// JobSpoke). JobClusters is the brokers' fleet file (default
	// DefaultJobClusters).
	Jobs        bool
	JobClusters string
	// MoveHook is the Hub's hook before each step of a move's saga
	// (hub.Options.MoveHook), kept across RestartHub.
	MoveHook func(step string) error
}

// Env is a running Hub with its brokers.
type Env struct {
	T          testing.TB
	Hub        *hub.Server
	Store      store.Store
	Server     *httptest.Server
	URL        string
	AdminToken string
	Admin      *client.Client
	ProjectID  string

	opts    Options
	log     *slog.Logger
	mu      sync.Mutex
	brokers []*Broker
	handler atomic.Value // handlerBox: the current Hub's, so RestartHub keeps the URL
	// secretsKey seals the Hub's secrets; a restarted Hub keeps it.
	secretsKey []byte
	// conns is the listener's connection limiter when opts.Serve is set.
	conns *transport.ConnLimiter
	// scan checks at Close that no credential reached the logs.
	scan *logScan
}

type handlerBox struct{ http.Handler }

// RestartHub replaces the Hub with a new one over the same store and
// address, as a Hub process restart would: the old Hub's broker sessions
// end and the brokers reconnect to the new one by themselves.
func (e *Env) RestartHub() {
	e.T.Helper()
	old := e.Hub
	e.StartHub()
	old.Close()
}

// StopHub stops the Hub as its process ending would: its broker sessions
// end, and until StartHub every connection to its address is cut as it
// arrives, nothing answered (the brokers keep reconnecting, a client's
// requests fail). For a test of what waits out a Hub's restart.
func (e *Env) StopHub() {
	e.handler.Store(handlerBox{http.HandlerFunc(cutConnection)})
	e.Hub.Close()
}

// cutConnection closes the connection of a request unanswered.
func cutConnection(w http.ResponseWriter, _ *http.Request) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	// A connection that cannot be taken over: the nearest to no answer.
	w.WriteHeader(http.StatusServiceUnavailable)
}

// StartHub starts a new Hub over the same store and address, serving
// from then on (after StopHub, or for RestartHub).
func (e *Env) StartHub() {
	e.T.Helper()
	h, err := hub.New(context.Background(), hub.Options{Store: e.Store, Logger: e.log, Version: "test", AccessLog: true,
		HeartbeatInterval: e.opts.HeartbeatInterval, Grace: e.opts.Grace, DispatchTimeout: e.opts.DispatchTimeout, OIDC: e.opts.OIDC, SecretsKey: e.secretsKey, AgentTokenTTL: e.opts.AgentTokenTTL, RateLimits: e.opts.RateLimits, Now: e.opts.Now, MoveHook: e.opts.MoveHook})
	if err != nil {
		e.T.Fatalf("testenv: start hub: %v", err)
	}
	h.SetPublicURL(e.URL)
	if e.conns != nil {
		h.WatchConnections(e.conns)
	}
	e.Hub = h
	e.handler.Store(handlerBox{h.Handler()})
}

// Broker is one in-process broker.
type Broker struct {
	*broker.Broker
	ID, Name string
	Secret   string
	Runtime  *fake.Runtime
	DataDir  string
	// RuntimeTarget makes it a flat Runtime Broker instance serving that
	// target (its hello declares it; see AddFlatBroker).
	RuntimeTarget *api.RuntimeTarget
	// Spoke is the broker's spoke clusters when Options.Jobs is set: it
	// outlives the broker's restarts, as the clusters would.
	Spoke  *JobSpoke
	cancel context.CancelFunc
	done   chan struct{}
}

// New starts a Hub and opts.Brokers brokers and waits until every broker
// is online.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 200 * time.Millisecond
	}
	if opts.Grace == 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = time.Second
	}
	if opts.DispatchTimeout == 0 {
		opts.DispatchTimeout = 10 * time.Second
	}
	if opts.RateLimits == nil {
		many := hub.Rate{PerMinute: 1 << 20, Burst: 1 << 20}
		opts.RateLimits = &hub.RateLimits{Join: many, Connect: many, AuthFailures: many}
	}
	e := &Env{T: t, opts: opts}
	e.scan = &logScan{}
	logTo := []io.Writer{e.scan}
	if opts.Verbose || os.Getenv("SCION_TEST_VERBOSE") != "" {
		logTo = append(logTo, os.Stderr)
	}
	if opts.LogTo != nil {
		logTo = append(logTo, opts.LogTo)
	}
	e.log = slog.New(slog.NewTextHandler(io.MultiWriter(logTo...), &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.secretsKey = make([]byte, 32)
	_, _ = rand.Read(e.secretsKey)
	ctx := context.Background()
	var err error
	if opts.Postgres {
		tt, ok := t.(*testing.T)
		if !ok {
			t.Fatal("testenv: Postgres needs a *testing.T")
		}
		e.Store, err = postgres.Open(ctx, storetest.NewPostgresDB(tt))
	} else {
		e.Store, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "hub.db"))
	}
	if err != nil {
		t.Fatalf("testenv: open store: %v", err)
	}
	if opts.WrapStore != nil {
		e.Store = opts.WrapStore(e.Store)
	}
	e.Hub, err = hub.New(ctx, hub.Options{Store: e.Store, Logger: e.log, Version: "test", AccessLog: true,
		HeartbeatInterval: opts.HeartbeatInterval, Grace: opts.Grace, DispatchTimeout: opts.DispatchTimeout, OIDC: opts.OIDC, SecretsKey: e.secretsKey, AgentTokenTTL: opts.AgentTokenTTL, RateLimits: opts.RateLimits, Now: opts.Now, MoveHook: opts.MoveHook})
	if err != nil {
		t.Fatalf("testenv: hub: %v", err)
	}
	e.handler.Store(handlerBox{e.Hub.Handler()})
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.handler.Load().(handlerBox).ServeHTTP(w, r)
	}))
	if opts.Serve != nil {
		hs, ln := transport.NewHTTPServer(e.Server.Config.Handler, e.Server.Listener, *opts.Serve, e.log)
		e.Server.Config, e.Server.Listener = hs, ln
		e.Hub.WatchConnections(ln)
		e.conns = ln
	}
	e.Server.Start()
	e.URL = e.Server.URL
	e.Hub.SetPublicURL(e.URL)
	if e.AdminToken, err = e.Hub.BootstrapAdmin(ctx); err != nil {
		t.Fatalf("testenv: admin: %v", err)
	}
	e.Admin = client.New(e.URL, e.AdminToken)
	e.NeverLogged(e.AdminToken, hex.EncodeToString(e.secretsKey))
	if e.ProjectID, err = e.Hub.EnsureProject(ctx, "default", ""); err != nil {
		t.Fatalf("testenv: project: %v", err)
	}
	t.Cleanup(e.Close)
	for i := 1; i <= opts.Brokers; i++ {
		b := e.AddBroker(fmt.Sprintf("b%d", i))
		if _, err := e.Admin.ProvideProject(ctx, b.ID, "default"); err != nil {
			t.Fatalf("testenv: provide: %v", err)
		}
	}
	return e
}

// AddBroker registers a broker with the fake runtime and starts it; it
// returns once the broker is online.
func (e *Env) AddBroker(name string) *Broker {
	e.T.Helper()
	creds, err := e.Hub.RegisterBroker(context.Background(), name, hub.BootstrapAdminID, false)
	if err != nil {
		e.T.Fatalf("testenv: register %s: %v", name, err)
	}
	return e.RunBroker(creds.BrokerID, name, creds.Secret)
}

// RunBroker starts a broker with the fake runtime under credentials the
// Hub issued elsewhere (a `scion runtime-broker register` of the test,
// say); it returns once the broker is online.
func (e *Env) RunBroker(id, name, secret string) *Broker {
	e.T.Helper()
	b := e.NewBroker(id, name, secret)
	e.StartBroker(b, fake.New())
	return b
}

// StartBroker (re)starts a broker process-equivalent with the given
// runtime, as a broker restart would, and waits until it is online.
func (e *Env) StartBroker(b *Broker, rt *fake.Runtime) {
	e.T.Helper()
	e.LaunchBroker(b, rt)
	e.WaitBrokerStatus(b.ID, api.BrokerOnline)
}

// LaunchBroker is StartBroker without waiting until the broker is online
// (for a broker whose hello the Hub refuses).
func (e *Env) LaunchBroker(b *Broker, rt *fake.Runtime) {
	e.T.Helper()
	var err error
	b.Runtime = rt
	var drop func(method, key string) bool
	if e.opts.DropReply != nil {
		drop = func(method, key string) bool { return e.opts.DropReply(b.Name, method, key) }
	}
	var brt runtime.Runtime = rt
	if name := e.opts.RuntimeNames[b.Name]; name != "" {
		brt = namedRuntime{rt, name}
	}
	res, keeps := e.opts.ProjectResources[b.Name]
	cleanErr, fails := e.opts.ProjectCleanupErr[b.Name]
	if keeps || fails {
		brt = projectKeeper{brt, res, cleanErr}
	}
	b.Broker, err = broker.New(broker.Config{HubEndpoint: e.URL, BrokerID: b.ID, Name: b.Name, Secret: []byte(b.Secret),
		Runtime: brt, DataDir: b.DataDir, Version: "test", Logger: e.log.With("broker", b.Name), Profiles: e.opts.Profiles[b.Name], Capabilities: e.opts.Capabilities[b.Name],
		HeartbeatInterval: e.opts.HeartbeatInterval, Grace: e.opts.Grace, RuntimeTarget: b.RuntimeTarget,
		MinBackoff: e.opts.MinBackoff, MaxBackoff: e.opts.MaxBackoff, RefusedBackoff: e.opts.MaxBackoff, DropReply: drop,
		Jobs: e.jobsConfig(b), GitWorkspaces: e.gitWorkspaces(b.Name)})
	if err != nil {
		e.T.Fatalf("testenv: broker %s: %v", b.Name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	go func() { defer close(b.done); _ = b.Broker.Run(ctx) }()
}

// namedRuntime is the fake runtime reporting another runtime's name.
type namedRuntime struct {
	*fake.Runtime
	name string
}

func (n namedRuntime) Name() string { return n.name }

// projectKeeper is a runtime that keeps resources for every project
// (runtime.ProjectCleaner).
type projectKeeper struct {
	runtime.Runtime
	resources []string
	err       error
}

func (p projectKeeper) CleanupProject(context.Context, string) ([]string, error) {
	if p.err != nil {
		return nil, p.err
	}
	return append([]string(nil), p.resources...), nil
}

// StopBroker stops a broker's daemon (its agents keep running in the
// runtime, as they would on a real host).
func (e *Env) StopBroker(b *Broker) {
	if b.cancel != nil {
		b.cancel()
		<-b.done
		b.cancel = nil
	}
}

// Brokers returns the started brokers.
func (e *Env) Brokers() []*Broker {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Broker(nil), e.brokers...)
}

// Close stops everything.
func (e *Env) Close() {
	for _, b := range e.Brokers() {
		e.StopBroker(b)
	}
	e.Hub.Close()
	e.Server.Close()
	_ = e.Store.Close()
	if s := e.scan.leaked(); s != "" {
		e.T.Errorf("testenv: a credential or secret (%s) appears in the Hub or broker logs", s)
	}
}

// WaitBrokerStatus waits until the Hub reports the broker online/offline.
func (e *Env) WaitBrokerStatus(id, status string) {
	e.T.Helper()
	wait.Eventually(e.T, 15*time.Second, wait.Interval, func() error {
		b, err := e.Admin.GetBroker(context.Background(), id)
		if err != nil {
			return err
		}
		if b.Status != status {
			return fmt.Errorf("broker %s is %s, want %s", b.Name, b.Status, status)
		}
		return nil
	})
}

func tempDir(t testing.TB) string {
	if tt, ok := t.(interface{ TempDir() string }); ok {
		return tt.TempDir()
	}
	d, _ := os.MkdirTemp("", "scion-testenv")
	return d
}

// gitWorkspaces is a broker's workspace settings: its export, if
// Options.Exports names one (the share as every broker names it).
func (e *Env) gitWorkspaces(broker string) workspace.GitConfig {
	root, ok := e.opts.Exports[broker]
	if !ok {
		return workspace.GitConfig{}
	}
	return workspace.GitConfig{LocalRemoteRoots: gitrepo.LocalRoots, Env: gitrepo.IsolatedEnv,
		Export: &workspace.Export{Root: root, Storage: workspace.Storage{Type: workspace.StorageNFS,
			Server: "nfs.test", Export: "/srv/scion", SubpathRoot: "ws"}}}
}
