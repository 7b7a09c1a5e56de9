package identity

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/signin"
	"github.com/scion-go/scion/store"
)

// Options configure a Service. The Hub fills them from its own options.
type Options struct {
	// Store is the Hub's store, wrapped by hub/authstore: the Service's
	// reads before a caller is known run as the system, its handlers'
	// as the request's caller.
	Store  store.Store
	Logger *slog.Logger
	// Now is the clock of lifetimes and windows (nil: time.Now).
	Now func() time.Time
	// AgentTokenTTL is how long an agent token works (default
	// api.DefaultAgentTokenTTL).
	AgentTokenTTL time.Duration
	// SecretsKey (32 bytes, or nil) seals the signing keys at rest and
	// the Hub's secrets (SecretBox).
	SecretsKey []byte
	// OIDC turns on the sign-in routes (nil: they answer 501).
	OIDC *signin.Config
	// RateLimits per client address (nil: DefaultRateLimits).
	RateLimits *RateLimits
	// Metrics serves GET /metrics to the callers its guard lets through.
	// The Hub's, passed in so that identity need not import it.
	Metrics http.Handler
	// LoadProject resolves a project reference (ID or name) for c and
	// checks that c may do a on it; an access token is made for the
	// project it returns. The Hub's, like Metrics.
	LoadProject func(ctx context.Context, c *authz.Caller, ref string, a authz.Action) (*store.Project, error)
}

// Service authenticates the Hub's requests and serves its identity
// routes. Build it with New.
type Service struct {
	opts     Options
	store    store.Store
	log      *slog.Logger
	tokenKey []byte
	secrets  *SecretBox
	rl       *rateLimits
	// oidc is the one sign-in state of this Service: Routes may be
	// listed many times, every listing shares its limiter and client.
	oidc *oidcSignIn
}

// New builds the Service: it loads the agent-token signing key, creating
// it once, and seals what an older version stored plain (see
// signing_keys.go). It runs before the Hub serves, as the system.
func New(ctx context.Context, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.AgentTokenTTL <= 0 {
		opts.AgentTokenTTL = api.DefaultAgentTokenTTL
	}
	s := &Service{opts: opts, store: opts.Store, log: opts.Logger}
	rl := DefaultRateLimits()
	if opts.RateLimits != nil {
		rl = *opts.RateLimits
	}
	s.rl = newRateLimits(rl)
	s.oidc = newOIDCSignIn(s)
	if opts.SecretsKey != nil {
		var err error
		if s.secrets, err = newSecretBox(opts.SecretsKey); err != nil {
			return nil, err
		}
	}
	ctx = authstore.AsSystem(ctx)
	if err := s.loadTokenKey(ctx); err != nil {
		return nil, err
	}
	if err := s.sealBrokerSecrets(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Secrets is the box sealing the Hub's secrets, nil when the Hub has no
// secrets key (the secrets API then answers 501).
func (s *Service) Secrets() *SecretBox { return s.secrets }

// Routes are the identity routes: sign-in, who am I, agent-token
// renewal, users, access tokens, /metrics and its scrape tokens. The
// Hub wraps the authenticated ones in RequireAuth, like its own.
func (s *Service) Routes() []httpapi.Route {
	a, pub := httpapi.Authed, httpapi.Public
	return []httpapi.Route{
		pub("POST /api/v1/auth/device", s.oidc.route(s.oidc.handleDeviceStart)),
		pub("POST /api/v1/auth/device/token", s.oidc.route(s.oidc.handleDeviceToken)),
		// Public in the route table: it checks its own credentials (a
		// scrape token or a Hub admin, metrics_auth.go).
		pub("GET /metrics", s.handleMetrics),
		a("GET /api/v1/auth/whoami", s.handleWhoami),
		a("POST /api/v1/auth/agent-token", s.handleRefreshAgentToken),

		a("GET /api/v1/users", s.handleListUsers),
		a("PATCH /api/v1/users/{user}", s.handleUpdateUser),

		a("POST /api/v1/auth/tokens", s.handleCreateAccessToken),
		a("GET /api/v1/auth/tokens", s.handleListAccessTokens),
		a("DELETE /api/v1/auth/tokens/{id}", s.handleRevokeAccessToken),

		a("POST /api/v1/admin/metrics-tokens", s.handleCreateMetricsToken),
		a("GET /api/v1/admin/metrics-tokens", s.handleListMetricsTokens),
		a("DELETE /api/v1/admin/metrics-tokens/{id}", s.handleRevokeMetricsToken),
	}
}

func (s *Service) handleWhoami(r *http.Request, c *authz.Caller) (int, any, error) {
	httpapi.MarkChecked(r.Context()) // anyone may ask who they are
	return http.StatusOK, api.Whoami{Kind: string(c.Kind), ID: c.ID, Name: c.Name, Role: c.Role, Project: c.ProjectID}, nil
}
