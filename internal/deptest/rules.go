package deptest

// Rules are the module's package boundaries (docs: docs/architecture.md,
// "Layout"). They hold for non-test files; tests may import harnesses.
// Every package must be matched by a row with an allow-list (Only): a
// new package says what it may import before the test passes (Check).
var Rules = []Rule{
	{
		// The wire types and error codes every side shares.
		Name: "api imports nothing of ours",
		Pkgs: []string{"api"}, Only: []string{},
	},
	{
		// The typed client is what a program of another module imports
		// to talk to a Hub: it drags in nothing but api, the standard
		// library and the attach transport.
		Name: "client imports only api",
		Pkgs: []string{"client/..."}, Only: []string{"api"}, Modules: []string{"github.com/coder/websocket"},
	},
	{
		// The settings files and the daemons' options: shared by the
		// CLI and the daemons, so it stays a leaf but for api, whose
		// name rules (names, harnesses, secret names) it applies.
		Name: "config imports only api",
		Pkgs: []string{"config"}, Only: []string{"api"},
	},
	{
		// Commands parse flags, call the Hub through client and render;
		// the daemons come in through cli.Daemons (cmd/scion fills them
		// from launch), never as imports. internal/splitplan is the
		// pure decision behind 'runtime-broker plan-split'; cli/hubconn
		// (which Hub, which token) and cli/show (how output looks) are
		// the CLI's own parts.
		Name: "cli imports only api, client, config, internal/splitplan and its parts",
		Pkgs: []string{"cli/..."}, Only: []string{"api", "client", "client/hubtls", "client/idtoken", "cli/hubconn", "cli/show", "config", "internal/splitplan"},
	},
	{
		// launch wires everything together; only the binary's main may
		// depend on it, so no library grows a dependency on all of it.
		Name: "only cmd/scion imports launch",
		Pkgs: []string{"..."}, Except: []string{"cmd/scion", "launch/..."}, Deny: []string{"launch/..."},
	},
	{
		Name: "store knows no server, broker, CLI or runtime",
		Pkgs: []string{"store/..."}, Deny: []string{"hub/...", "broker/...", "cli/...", "runtime/...", "launch/..."},
	},
	{
		Name: "wire knows no server, broker, store or CLI",
		Pkgs: []string{"wire/..."}, Deny: []string{"hub/...", "broker/...", "store/...", "cli/...", "runtime/...", "launch/..."},
	},
	{
		Name: "runtime knows no server, broker, store or CLI",
		Pkgs: []string{"runtime/..."}, Deny: []string{"hub/...", "broker/...", "store/...", "cli/...", "launch/..."},
	},
	{
		// The broker's record of keyed commands (a store and the
		// coalescing of duplicates) and its host port pool: parts of the
		// broker that know nothing of the rest of it.
		Name: "broker/idempotency and broker/portpool import only api",
		Pkgs: []string{"broker/idempotency", "broker/portpool"}, Only: []string{"api"},
	},
	{
		// Decisions over plain values, table-tested without a server: of
		// ours only api (for the error codes), no files, sockets or
		// processes, and net/http for its status constants only.
		Name: "hub/placement, hub/authz and hub/lifecycle are pure",
		Pkgs: []string{"hub/placement/...", "hub/authz/...", "hub/lifecycle/..."}, Only: []string{"api"}, Pure: true,
	},
	{
		// The spokes' fleet file and per-call client configs (ADR-0046):
		// of ours only api and the config leaf (client-go and the TOML
		// decoder are the other modules). The SSH tunnel plugs in through
		// its Dialer interface, so spoke/tunnel is not imported either.
		Name: "spoke/fleet imports only api and config",
		Pkgs: []string{"spoke/fleet"}, Only: []string{"api", "config"},
	},
	{
		// The bastion tier's SSH client: x/crypto/ssh and nothing of ours.
		Name: "spoke/tunnel imports nothing of ours",
		Pkgs: []string{"spoke/tunnel"}, Only: []string{},
	},
	{
		// Opening a spoke: the fleet block, the tunnel and the runner's
		// client type; the Hub is reached only through the Secrets
		// function the broker gives, so no wire, hub or broker.
		Name: "spoke/connect imports only the spoke packages, api and config",
		Pkgs: []string{"spoke/connect"}, Only: []string{"api", "config", "spoke/fleet", "spoke/jobs", "spoke/tunnel"},
	},
	{
		// The Job runner (ADR-0046 §4): submits, follows and sweeps
		// Jobs on a spoke through the clients it is given. Of ours only
		// api (the Job states and bounds) and spoke/fleet (the spokes'
		// typed errors, and the config leaf it brings); never the Hub,
		// the store, the broker or the CLI, which call it.
		Name: "spoke/jobs imports only api and spoke/fleet",
		Pkgs: []string{"spoke/jobs"}, Only: []string{"api", "spoke/fleet", "config"},
	},
	{
		// `scion check`'s decisions (ADR-0046): results from what the
		// probes saw, table-tested without a cluster.
		Name: "spoke/check is pure",
		Pkgs: []string{"spoke/check"}, Only: []string{"api"}, Pure: true,
	},
	{
		// `scion check`'s I/O: reaches spokes (spoke/fleet, its tiers),
		// the broker's own cluster and the Hub's broker-scoped secrets
		// (wire); it reads the runtime's pod template from
		// runtime/kubernetes. No Hub, store, broker daemon or CLI.
		Name: "spoke/check/probe knows no server, store, broker or CLI",
		Pkgs: []string{"spoke/check/probe"}, Deny: []string{"hub/...", "broker", "store/...", "cli/...", "launch/..."},
	},
	{
		// The legacy broker split planner: a decision over plain values
		// that the CLI runs; it imports nothing of ours.
		Name: "internal/splitplan is pure",
		Pkgs: []string{"internal/splitplan"}, Only: []string{}, Pure: true,
	},
	{
		// The real HTTP CONNECT proxy of the tests (tinyproxy as a child
		// process): a leaf any package's tests may use.
		Name: "internal/testenv/proxy imports nothing of ours",
		Pkgs: []string{"internal/testenv/proxy"}, Only: []string{},
	},
	{
		// The git repositories the workspace tests clone from: a leaf
		// the broker's and broker/workspace's tests share.
		Name: "internal/testenv/gitrepo imports nothing of ours",
		Pkgs: []string{"internal/testenv/gitrepo"}, Only: []string{},
	},
	{
		// The Hub's listener and HTTP server guards (connection caps,
		// body rates, per-caller slots, per-address token buckets): plain
		// net/http over a net.Listener, knowing nothing of routes,
		// callers or records; of ours only api for the refusal's body.
		Name: "hub/transport imports only api",
		Pkgs: []string{"hub/transport"}, Only: []string{"api"},
	},
	{
		// The Hub's OIDC sign-in against its provider: discovery, the
		// device flow's requests, the ID token's verification. It holds
		// no records (the Hub finds or makes the user); of ours only api,
		// of other modules only go-oidc (and what it brings).
		Name: "hub/signin imports only api and go-oidc",
		Pkgs: []string{"hub/signin"}, Only: []string{"api"},
		Modules: []string{"github.com/coreos/go-oidc/v3", "github.com/go-jose/go-jose/v4", "golang.org/x/oauth2"},
	},
	{
		// The Hub's decisions (load, plan, commit, dispatch, answer; see
		// its package doc): pure functions over records, settings, the
		// request and the caller, so of ours the pure rules they apply,
		// the record types (store: its interface is named by nothing
		// here, TestPlansArePure), the broker methods (wire) and the
		// store errors' mapping (hub/storeerr).
		Name: "hub/plan is pure and imports only the rules, records and wire",
		Pkgs: []string{"hub/plan"}, Only: []string{"api", "hub/authz", "hub/lifecycle", "hub/placement", "hub/storeerr", "store", "wire"}, Pure: true,
	},
	{
		// The one mapping of store errors to API errors, which the
		// handlers and the plans both answer with.
		Name: "hub/storeerr imports only api and store",
		Pkgs: []string{"hub/storeerr"}, Only: []string{"api", "store"}, Pure: true,
	},
	{
		// What every room of the Hub's HTTP surface shares: routes,
		// handler shapes, JSON bodies and errors, paging, the check mark.
		// No room's state: it never reaches a Server or a record.
		Name: "hub/httpapi imports only api, hub/authz, hub/storeerr, hub/transport and store",
		Pkgs: []string{"hub/httpapi"}, Only: []string{"api", "hub/authz", "hub/storeerr", "hub/transport", "store"},
	},
	{
		// The brokers' control channels as the Hub holds them: sessions
		// and the dispatch of commands over them. What a broker's
		// messages mean is the Hub's.
		Name: "hub/channel imports only api, hub/plan (and its pure parts) and wire",
		Pkgs: []string{"hub/channel"}, Only: []string{"api", "hub/authz", "hub/lifecycle", "hub/placement", "hub/plan", "hub/storeerr", "store", "wire"},
	},
	{
		// The Hub's settings and limits: their cache, writer and routes,
		// over the Hub's authorizing store.
		Name: "hub/settings imports only api, store and the Hub parts below it",
		Pkgs: []string{"hub/settings"}, Only: []string{"api", "hub/authstore", "hub/authz", "hub/httpapi", "hub/storeerr", "hub/transport", "store"},
	},
	{
		// Who a request comes from and the credentials that say so:
		// authentication, tokens, users, sign-in, the signing keys and
		// the secrets key's box, the limits on strangers. What it needs
		// of the Hub comes in as values (the metrics handler, a
		// project's lookup), so it never imports hub; wire for the
		// brokers' request signature, the protocol's. Of other modules
		// only what its parts bring (OIDC, the token buckets, new IDs,
		// wire's websocket): no metrics library, no database driver.
		Name: "hub/identity imports only api, hub/authstore, hub/authz, hub/httpapi, hub/signin, hub/storeerr, hub/transport, store and wire",
		Pkgs: []string{"hub/identity"}, Only: []string{"api", "hub/authstore", "hub/authz", "hub/httpapi", "hub/signin", "hub/storeerr", "hub/transport", "store", "wire"},
		Modules: []string{"github.com/coder/websocket", "github.com/coreos/go-oidc/v3", "github.com/go-jose/go-jose/v4", "github.com/google/uuid",
			"golang.org/x/oauth2", "golang.org/x/time"},
	},
	{
		// The store with authorization in its path: a store.Store that
		// decides every call with the rules of hub/authz for the caller
		// its context carries. Of ours only the error type, the rules
		// and the interface it wraps: it must not reach the Server or a
		// plan, so the floor it holds does not depend on what a handler
		// did; no I/O of its own (the store it wraps does that).
		Name: "hub/authstore imports only api, hub/authz and store",
		Pkgs: []string{"hub/authstore"}, Only: []string{"api", "hub/authz", "store"}, Pure: true,
	},
	{
		// The room of delegated Jobs (ADR-0046): the Jobs' ledger and
		// routes, broker-scoped secrets. What it needs of the Hub it
		// takes as its own interface (jobs.Hub), which the hub package
		// implements: importing hub would be a cycle, and would let the
		// room reach the Server's internals. Of ours the rules
		// (hub/authz, hub/plan and the pure parts they bring), the
		// authorizing store's caller, the shared HTTP surface (with
		// hub/transport under it), the records and wire.
		Name: "hub/jobs imports only api, the Hub's shared parts, store and wire",
		Pkgs: []string{"hub/jobs"}, Only: []string{"api", "hub/authstore", "hub/authz", "hub/httpapi", "hub/lifecycle", "hub/placement", "hub/plan", "hub/storeerr", "hub/transport", "store", "wire"},
	},
	{
		// The room of moves: the reincarnate route over the pure checks.
		Name: "hub/moves imports only api, the Hub's shared parts, store and wire",
		Pkgs: []string{"hub/moves"}, Only: []string{"api", "hub/authz", "hub/httpapi", "hub/lifecycle", "hub/placement", "hub/plan", "hub/storeerr", "hub/transport", "store", "wire"},
	},
	{
		// The Hub: its HTTP surface, sessions, dispatch and records. It
		// reaches brokers only over wire and data only through the store
		// interface, wrapped by hub/authstore; the engine (store/sqlite,
		// store/postgres), the broker and the runtimes are chosen and
		// wired by launch. web is its page's templates and script.
		Name: "hub imports only api, its own parts, store, web and wire",
		Pkgs: []string{"hub"}, Only: []string{"api", "hub/authstore", "hub/authz", "hub/channel", "hub/events", "hub/httpapi", "hub/identity", "hub/jobs", "hub/lifecycle", "hub/moves", "hub/placement", "hub/plan", "hub/settings", "hub/signin", "hub/storeerr", "hub/transport", "store", "web", "wire"},
	},
	{
		// The live feed's changes: a store decorator and a bus, knowing
		// records by kind and ID only.
		Name: "hub/events imports only store",
		Pkgs: []string{"hub/events"}, Only: []string{"api", "store"},
	},
	{
		// The page renders what the Hub hands it and decides nothing.
		Name: "web imports only api",
		Pkgs: []string{"web"}, Only: []string{"api"},
	},
	{
		// Agents' workspaces on the broker's host: directories and git.
		// The agent spec comes over wire; nothing of the Hub, the
		// runtimes or the channel.
		Name: "broker/workspace imports only api, wire and internal/keylock",
		Pkgs: []string{"broker/workspace"}, Only: []string{"api", "internal/keylock", "wire"},
	},
	{
		// The broker daemon: the runtime interface (a concrete runtime is
		// given by launch), the Hub over wire, the spokes for Jobs.
		Name: "broker imports only api, config, runtime, spoke, wire and its parts",
		Pkgs: []string{"broker"}, Only: []string{"api", "broker/...", "config", "internal/keylock", "runtime",
			"spoke/connect", "spoke/fleet", "spoke/jobs", "spoke/tunnel", "wire"},
	},
	{
		// The daemons' wiring: every product part, never the CLI, the
		// typed client or a test harness. client/idtoken (a Hub
		// connection's transport auth) and client/hubtls (its trust),
		// standard library only, are the broker's as much as the CLI's.
		Name: "launch wires the product parts, not the CLI or harnesses",
		Pkgs: []string{"launch"}, Only: append([]string{"client/hubtls", "client/idtoken"}, productParts...),
	},
	{
		// The binary: the CLI and the daemons it launches.
		Name: "cmd/scion is the CLI and launch",
		Pkgs: []string{"cmd/scion"}, Only: append([]string{"cli/...", "client", "client/hubtls", "client/idtoken", "internal/splitplan", "launch"}, productParts...),
	},
	{
		Name: "wire imports only api",
		Pkgs: []string{"wire"}, Only: []string{"api"},
	},
	{
		// Runtimes: the interface, and for Kubernetes the settings leaf.
		Name: "runtime imports only runtime, api, config and internal/keylock",
		Pkgs: []string{"runtime/..."}, Except: []string{"runtime/runtimetest", "runtime/docker/internal/testagent"},
		Only: []string{"api", "config", "internal/keylock", "runtime/..."},
	},
	{
		Name: "store imports only api and store",
		Pkgs: []string{"store/..."}, Except: []string{"store/storetest"}, Only: []string{"api", "store/..."},
	},
	{
		// `scion check`'s probes: the spokes, the runtime's pod template
		// and the Hub's broker-scoped secrets over wire.
		Name: "spoke/check/probe imports only spoke, runtime, api, config and wire",
		Pkgs: []string{"spoke/check/probe"}, Only: []string{"api", "config", "internal/keylock", "runtime", "runtime/kubernetes",
			"spoke/check", "spoke/connect", "spoke/fleet", "spoke/jobs", "spoke/tunnel", "wire"},
	},
	{
		// Small leaves shared by the product and its tests.
		Name: "internal/keylock, internal/fakeclock and internal/wait import nothing of ours",
		Pkgs: []string{"internal/keylock", "internal/fakeclock", "internal/wait"}, Only: []string{},
	},
	{
		// Harnesses and benchmarks drive the product as its users do:
		// they may import any part but the CLI and launch (they start
		// the binary instead), and no product package imports them.
		Name: "harnesses and benchmarks import product parts, not the CLI or launch",
		Pkgs: harnesses, Except: []string{"internal/testenv/proxy", "internal/testenv/gitrepo"}, Only: append([]string{"client", "internal/..."}, productParts...),
	},
	{
		Name: "no product package imports a harness or a benchmark",
		Pkgs: []string{"..."}, Except: harnesses, Deny: harnesses,
	},
}

// productParts are the packages the daemons are made of.
var productParts = []string{"api", "broker/...", "config", "hub/...", "internal/keylock", "runtime/...", "spoke/...", "store/...", "web", "wire"}

// harnesses are the test harnesses and benchmarks: packages whose non-test
// files exist only for tests and bench/.
var harnesses = []string{"bench/...", "internal/testenv/...", "internal/deptest", "store/storetest", "runtime/runtimetest",
	"runtime/docker/internal/testagent", "test/..."}
