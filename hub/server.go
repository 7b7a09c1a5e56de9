// Package hub is the Scion Hub: the REST API under /api/v1, the control
// channel endpoint that Runtime Brokers dial, and the dispatch of agent
// lifecycle commands to them. Handlers load state from the store, decide
// with pure functions (hub/placement, hub/authz), persist in one
// transaction, then dispatch. One file per resource. The store is
// hub/authstore's wrapper: every call is decided again for the caller
// the request's context carries, or runs as the system for the Hub's own
// work (systemCtx).
//
// The large handlers (create, the lifecycle actions, delete, the
// reconciliation of a broker's inventory) keep the decision in a pure plan
// function of their own, table-tested without a server: plan.go describes
// the shape (load, plan, commit, dispatch, answer) and where the flat
// brokers' placement checks (plan.Reach) and the move saga (one more plan)
// go.
package hub

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/channel"
	"github.com/scion-go/scion/hub/events"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/identity"
	"github.com/scion-go/scion/hub/jobs"
	"github.com/scion-go/scion/hub/moves"
	"github.com/scion-go/scion/hub/settings"
	"github.com/scion-go/scion/hub/signin"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/web"
	"github.com/scion-go/scion/wire"
)

// Options configure a Hub.
type Options struct {
	Store   store.Store
	Logger  *slog.Logger
	Version string
	// PublicURL is the Hub address given to brokers and agents
	// (SCION_HUB_ENDPOINT). Set after the listener is known if empty.
	PublicURL string
	// HeartbeatInterval and Grace bound how long a silent broker stays
	// online: it is marked offline after Interval+Grace without a frame.
	HeartbeatInterval time.Duration
	Grace             time.Duration
	// DispatchTimeout bounds one command to a broker (default 30s).
	DispatchTimeout time.Duration
	// OIDC turns on user sign-in through an OIDC provider.
	OIDC *signin.Config
	// SecretsKey (32 bytes) seals Hub secrets at rest. It belongs outside
	// the database (a key file); without it the secrets API answers 501.
	SecretsKey []byte
	// RateLimits per client address (nil: identity.DefaultRateLimits).
	RateLimits *RateLimits
	// AccessLog logs a line per request (method, route, status,
	// duration, caller, request ID) at info; health and metrics probes
	// at debug.
	AccessLog bool
	// AgentTokenTTL is how long an agent token works (default
	// api.DefaultAgentTokenTTL); a running agent renews its token before.
	AgentTokenTTL time.Duration
	// Now is the Hub's clock for lifetimes and windows: agent-token issue
	// and expiry, user, access and join-token expiry, the rate limits' refill,
	// the broker signatures' window (nil: time.Now). Tests advance a fake
	// clock (internal/fakeclock) instead of sleeping through a lifetime.
	Now func() time.Time
	// MoveHook is a test's: it runs before each step of a move's saga
	// (hub/moves Hook*); an error fails that step, moves.ErrHalt stops
	// the saga as a Hub killed there would.
	MoveHook func(step string) error
}

// Server is a Hub.
type Server struct {
	opts Options
	// store is the only store the Server holds: opts.Store wrapped by
	// hub/authstore, which decides every call for the caller its context
	// carries (see systemCtx for the Hub's own work).
	store store.Store
	log   *slog.Logger
	// id authenticates every request and serves the identity routes
	// (hub/identity); secrets is its box, nil without a secrets key.
	id       *identity.Service
	secrets  *identity.SecretBox
	mux      *http.ServeMux
	metrics  *metrics
	sessions *channel.Registry
	disp     *channel.Dispatcher // commands to brokers over sessions
	observed observed
	inflight inflight
	keyed    keyedCreates
	// queueLock serialises queueing a stop for a broker with declaring
	// its queue drained; drainLock keeps drains of one broker apart.
	queueLock brokerLocks
	drainLock brokerLocks
	// jobs is the room of delegated Jobs, hub/jobs (what it takes of the
	// Server: jobs_room.go).
	jobs *jobs.Service
	// moves is the room of moves, hub/moves (moves_room.go).
	moves *moves.Service

	settings *settings.Settings

	// bus tells the web page's live feed what the store's writes changed
	// (hub/events); pages renders the page (package web).
	bus   *events.Bus
	pages *web.Pages

	bg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// New builds a Hub over an open store. It marks every broker offline (no
// broker has a session with this process yet) and builds its identity
// service, which loads the persistent agent-token signing key, creating
// it once (hub/identity).
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("hub: no store")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = wire.DefaultHeartbeatInterval
	}
	if opts.Grace <= 0 {
		opts.Grace = wire.DefaultGrace
	}
	if opts.DispatchTimeout <= 0 {
		opts.DispatchTimeout = 30 * time.Second
	}
	if opts.AgentTokenTTL <= 0 {
		opts.AgentTokenTTL = api.DefaultAgentTokenTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	bus := &events.Bus{}
	s := &Server{
		opts:  opts,
		store: authstore.New(events.Wrap(opts.Store, bus)),
		log:   opts.Logger,
		bus:   bus,
		pages: web.New(),
	}
	s.opts.Store = nil // every call goes through the wrapper
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Starting the Hub is its own work: the signing key, the brokers'
	// status, the sweeps of what a killed Hub left.
	ctx = authstore.AsSystem(ctx)
	s.sessions = channel.NewRegistry()
	s.metrics = newMetrics(s)
	s.disp = &channel.Dispatcher{Sessions: s.sessions, Log: s.log, Timeout: opts.DispatchTimeout, Resend: s.checkResend,
		Closing: s.ctx.Done(), Observe: func(method, outcome string, took time.Duration) {
			s.metrics.dispatch.WithLabelValues(method, outcome).Observe(took.Seconds())
		}}
	var err error
	if s.id, err = identity.New(ctx, identity.Options{Store: s.store, Logger: s.log, Now: opts.Now,
		AgentTokenTTL: opts.AgentTokenTTL, SecretsKey: opts.SecretsKey, OIDC: opts.OIDC, RateLimits: opts.RateLimits,
		Metrics: s.metrics.handler(), LoadProject: s.loadProject}); err != nil {
		return nil, err
	}
	s.secrets = s.id.Secrets()
	s.settings = settings.New(s.store, s.log, s.systemCtx)
	s.jobs = s.newJobs()
	s.moves = s.newMoves()
	if err := s.settings.PinDefault(ctx); err != nil {
		return nil, err
	}
	if err := s.markAllOffline(ctx); err != nil {
		return nil, err
	}
	s.jobs.ExpirePending(ctx, true)
	if err := s.moves.Recover(ctx); err != nil {
		return nil, err
	}
	s.routes()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.janitor()
	}()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.jobs.SweepPending()
	}()
	return s, nil
}

// systemCtx is the context of the Hub's own work (reconciliation, the
// delivery of queued dispatches, sweeps, what a request's action leaves
// to the Hub): the system caller of hub/authstore, from the Hub's own
// context. A request's context never carries it: AsSystem on one is
// refused.
func (s *Server) systemCtx() context.Context { return authstore.AsSystem(s.ctx) }

// Handler is the Hub's HTTP handler.
func (s *Server) Handler() http.Handler { return s.metrics.wrap(s.mux, s.accessLog()) }

// SetPublicURL sets the address given to brokers and agents.
func (s *Server) SetPublicURL(u string) { s.opts.PublicURL = u }

// Close ends every broker session and background work.
func (s *Server) Close() {
	s.cancel()
	s.sessions.CloseAll("hub shutting down")
	s.bg.Wait()
}

func (s *Server) markAllOffline(ctx context.Context) error {
	page := store.Page{Limit: 1000}
	for {
		bs, next, _, err := s.store.ListBrokers(ctx, page)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if b.Status != api.BrokerOffline {
				if err := s.store.SetBrokerStatus(ctx, b.ID, api.BrokerOffline, b.LastSeen); err != nil {
					return err
				}
			}
		}
		if next == "" {
			return nil
		}
		page.Cursor = next
	}
}

// Route is one entry of the Hub's route table (see httpapi.Route).
type Route = httpapi.Route

// Routes lists every route the Hub serves; tests walk it so that no route
// can be added without an authentication check.
func (s *Server) Routes() []Route {
	a, stream, pub := httpapi.Authed, httpapi.Stream, httpapi.Public
	// Sign-in, whoami, users, tokens and /metrics are hub/identity's.
	routes := append(s.id.Routes(), []Route{
		pub("GET /healthz", s.handleHealthz),
		pub("GET /readyz", s.handleReadyz),

		a("POST /api/v1/projects", s.handleCreateProject),
		a("GET /api/v1/projects", s.handleListProjects),
		a("GET /api/v1/projects/{project}", s.handleGetProject),
		a("PATCH /api/v1/projects/{project}", s.handleUpdateProject),
		a("DELETE /api/v1/projects/{project}", s.handleDeleteProject),

		a("POST /api/v1/runtime-brokers", s.handleRegisterBroker),
		pub("POST /api/v1/runtime-brokers/join", s.id.JoinLimited(s.handleJoinBroker)),
		a("POST /api/v1/runtime-brokers/join-tokens", s.handleCreateJoinToken),
		a("GET /api/v1/runtime-brokers", s.handleListBrokers),
		pub("GET /api/v1/runtime-brokers/connect", s.id.ConnectLimited(s.handleConnect)),
		a("GET /api/v1/runtime-brokers/{broker}", s.handleGetBroker),
		a("PATCH /api/v1/runtime-brokers/{broker}", s.handleUpdateBroker),
		a("DELETE /api/v1/runtime-brokers/{broker}", s.handleDeregisterBroker),
		a("PUT /api/v1/runtime-brokers/{broker}/projects/{project}", s.handleProvide),
		a("DELETE /api/v1/runtime-brokers/{broker}/projects/{project}", s.handleWithdraw),

		a("POST /api/v1/agents", s.handleCreateAgent),
		a("GET /api/v1/agents", s.handleListAgents),
		a("GET /api/v1/agents/{agent}", s.handleGetAgent),
		a("PATCH /api/v1/agents/{agent}", s.handleUpdateAgent),
		a("DELETE /api/v1/agents/{agent}", s.handleDeleteAgent),
		a("POST /api/v1/agents/{agent}/{action}", s.handleAgentAction),
		stream("GET /api/v1/agents/{agent}/logs", s.handleAgentLogs),
		stream("POST /api/v1/agents/{agent}/exec", s.handleAgentExec),
		stream("GET /api/v1/agents/{agent}/attach", s.handleAgentAttach),

		a("PUT /api/v1/secrets/{name}", s.handlePutSecret),
		a("GET /api/v1/secrets", s.handleListSecrets),
		a("DELETE /api/v1/secrets/{name}", s.handleDeleteSecret),
	}...)
	routes = append(routes, s.settings.Routes()...)
	routes = append(routes, s.moves.Routes()...)
	routes = append(routes, s.uiRoutes()...)
	return append(routes, s.jobs.Routes()...)
}

func (s *Server) routes() {
	m := http.NewServeMux()
	for _, rt := range s.Routes() {
		switch {
		case rt.Public:
			m.Handle(rt.Pattern, rt.Open)
		case rt.Stream != nil && strings.Contains(rt.Pattern, " /ui/"):
			// The web page: its session cookie, then as the API.
			page := !strings.HasSuffix(rt.Pattern, "/logs") && !strings.HasSuffix(rt.Pattern, "/events")
			m.Handle(rt.Pattern, s.uiAuth(page, s.id.RequireAuth(httpapi.Streaming(rt.Stream))))
		case rt.Stream != nil:
			m.Handle(rt.Pattern, s.id.RequireAuth(httpapi.Streaming(rt.Stream)))
		default:
			m.Handle(rt.Pattern, s.id.RequireAuth(httpapi.Serve(s.log, rt.Authed)))
		}
	}
	// Anything else under the API is a typed 404, not the mux's text page.
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(s.log, w, r, api.NotFound(api.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	s.mux = m
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, api.Health{Status: "ok", Version: s.opts.Version})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, api.Health{Status: "unavailable", Checks: map[string]string{"database": "unreachable"}})
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, api.Health{Status: "ok", Checks: map[string]string{"database": "ok"}, Version: s.opts.Version})
}
