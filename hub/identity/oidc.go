package identity

import (
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/signin"
	"github.com/scion-go/scion/hub/transport"
)

// maxSignInBody bounds the sign-in request bodies (a device code).
const maxSignInBody = 8 << 10

// oidcSignIn is the Hub's sign-in state: the rate limiter, the HTTP client
// for the provider and, once discovery has worked, the provider. The
// Service holds the one instance (newOIDCSignIn runs once, in New), so
// every listing of its routes shares them.
type oidcSignIn struct {
	s       *Service
	cfg     *signin.Config // nil: sign-in is off
	limiter *transport.IPLimiter
	client  *signin.Client
}

func newOIDCSignIn(s *Service) *oidcSignIn {
	perMinute, burst := 120, 30
	if c := s.opts.OIDC; c != nil {
		if c.RequestsPerMinute > 0 {
			perMinute = c.RequestsPerMinute
		}
		if c.Burst > 0 {
			burst = c.Burst
		}
	}
	o := &oidcSignIn{s: s, cfg: s.opts.OIDC, limiter: transport.NewIPLimiter(perMinute, burst)}
	if o.cfg != nil {
		o.client = signin.NewClient(o.cfg, s.log)
	}
	return o
}

// route adapts a sign-in handler: 501 without OIDC (which costs nothing,
// so it is not limited), a rate limit per client address, a small body
// bound, the standard error body.
func (o *oidcSignIn) route(h func(r *http.Request) (int, any, error)) http.HandlerFunc {
	s := o.s
	return func(w http.ResponseWriter, r *http.Request) {
		if o.cfg == nil {
			httpapi.WriteError(s.log, w, r, api.Errorf(api.CodeOIDCNotConfigured,
				"this Hub has no OIDC provider configured; sign in with a token (scion hub auth login --token)"))
			return
		}
		ip := transport.ClientIP(r)
		if ok, wait := o.limiter.Allow(ip, s.opts.Now()); !ok {
			// Debug: a flood must not become a flood of log lines.
			s.log.Debug("oidc sign-in refused", "reason", "rate limited", "client", ip)
			s.refuseRateLimited(w, r, wait, "sign-in requests")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxSignInBody)
		w.Header().Set("Cache-Control", "no-store")
		status, body, err := h(r)
		if err != nil {
			httpapi.WriteError(s.log, w, r, err)
			return
		}
		httpapi.WriteJSON(w, status, body)
	}
}

// handleDeviceStart asks the provider for a device code and user code.
func (o *oidcSignIn) handleDeviceStart(r *http.Request) (int, any, error) {
	p, err := o.client.Discover(r.Context())
	if err != nil {
		return 0, nil, err
	}
	d, err := o.client.DeviceAuthorization(r.Context(), p)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, d, nil
}

// handleDeviceToken makes one token request for a device code. On
// success it verifies the ID token, finds or creates the user and mints
// a Hub user token.
func (o *oidcSignIn) handleDeviceToken(r *http.Request) (int, any, error) {
	var req api.DeviceTokenRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.DeviceCode == "" || len(req.DeviceCode) > 2048 {
		return 0, nil, api.BadRequest("deviceCode is required (from POST /api/v1/auth/device)")
	}
	p, err := o.client.Discover(r.Context())
	if err != nil {
		return 0, nil, err
	}
	rawIDToken, err := o.client.DeviceToken(r.Context(), p, req.DeviceCode)
	if err != nil {
		return 0, nil, err
	}
	id, err := o.client.VerifyIDToken(r.Context(), p, rawIDToken)
	if err != nil {
		return 0, nil, err
	}
	// Sign-in is authentication: its user and token are written before
	// there is a caller, as the system.
	ctx := authstore.AsSystem(r.Context())
	u, created, err := o.signInUser(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	tok, err := o.s.newUserToken(ctx, u.ID, "oidc sign-in", signInTTL)
	if err != nil {
		return 0, nil, err
	}
	o.s.log.Info("oidc sign-in", "user", u.ID, "role", u.Role, "firstSignIn", created)
	return http.StatusOK, api.SignIn{Token: tok, User: api.User{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, CreatedAt: u.CreatedAt}}, nil
}
