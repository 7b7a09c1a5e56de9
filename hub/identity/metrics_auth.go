// Who may read /metrics. The metrics name things a member must not learn
// (scion_jobs_total{cluster=...} names every cluster that ran a Job,
// including blocks that only one profile offers, which cluster_not_found
// hides from everyone else), so the route takes a scrape token an admin
// made (Kind store.TokenMetrics, "scm_...": good for /metrics only, and
// only while its creator is a Hub admin) or a Hub admin's own token.
// Anonymous callers get 401, any other caller 403; failed credentials
// count against the failed-authentication limit like on every route.

package identity

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/hub/transport"
	"github.com/scion-go/scion/store"
)

const metricsTokenPrefix = "scm_"

// defaultMetricsTokenTTL is a scrape token's lifetime unless asked
// otherwise (and its longest): a Prometheus configuration outlives most
// sessions, and the token can be revoked.
const defaultMetricsTokenTTL = 365 * 24 * time.Hour

func (s *Service) handleMetrics(w http.ResponseWriter, r *http.Request) {
	ip := transport.ClientIP(r)
	if blocked, wait := s.rl.authFail.Blocked(ip, s.opts.Now()); blocked {
		s.refuseRateLimited(w, r, wait, "failed authentications")
		return
	}
	if err := s.metricsAccess(r); err != nil {
		if api.IsCode(err, api.CodeUnauthorized) && r.Header.Get("Authorization") != "" {
			s.rl.authFail.Fail(ip, s.opts.Now())
		}
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	s.opts.Metrics.ServeHTTP(w, r)
}

// metricsAccess is nil when r may read the metrics.
func (s *Service) metricsAccess(r *http.Request) error {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return api.Unauthorized("authentication required: /metrics takes a scrape token (scion hub metrics-tokens create) or a Hub admin's token")
	}
	if strings.HasPrefix(tok, metricsTokenPrefix) {
		t, u, err := s.store.GetTokenAndUser(authstore.AsSystem(r.Context()), HashToken(tok)) // authentication
		if err != nil || t.Kind != store.TokenMetrics || t.RevokedAt != nil || (t.ExpiresAt != nil && !s.opts.Now().Before(*t.ExpiresAt)) {
			s.log.Warn("scrape token rejected")
			return api.Unauthorized("invalid or expired token")
		}
		if u.Role != api.RoleAdmin {
			return api.Forbidden("this scrape token's creator is no longer a Hub admin: an admin makes a new one")
		}
		return nil
	}
	c, err := s.authenticate(r)
	if err != nil {
		return err
	}
	if c.Kind != authz.User || c.Role != api.RoleAdmin {
		return api.Forbidden("/metrics is for a scrape token (an admin makes one: scion hub metrics-tokens create) or a Hub admin")
	}
	return nil
}

func metricsTokenView(t *store.Token) api.MetricsToken {
	return api.MetricsToken{ID: t.ID, Name: t.Name, ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, CreatedAt: t.CreatedAt}
}

func (s *Service) handleCreateMetricsToken(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	if err := httpapi.Authorize(ctx, s.log, c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.CreateMetricsTokenRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if err := api.CheckName("token", req.Name); err != nil {
		return 0, nil, err
	}
	ttl := defaultMetricsTokenTTL
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 || d > defaultMetricsTokenTTL {
			return 0, nil, api.BadRequest("expiresIn must be a positive Go duration up to 8760h")
		}
		ttl = d
	}
	tok := metricsTokenPrefix + base64.RawURLEncoding.EncodeToString(NewSecret(32))
	now := s.opts.Now().UTC()
	exp := now.Add(ttl)
	t := &store.Token{ID: httpapi.NewID(), Hash: HashToken(tok), Kind: store.TokenMetrics, UserID: c.UserID, Name: req.Name,
		ExpiresAt: &exp, CreatedAt: now}
	if err := s.store.CreateToken(ctx, t); err != nil {
		return 0, nil, err
	}
	s.log.Info("scrape token created", "user", c.UserID, "token_id", t.ID)
	v := metricsTokenView(t)
	v.Token = tok
	return http.StatusCreated, v, nil
}

func (s *Service) handleListMetricsTokens(r *http.Request, c *authz.Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	ts, err := s.store.ListTokens(r.Context(), c.UserID)
	if err != nil {
		return 0, nil, err
	}
	out := api.List[api.MetricsToken]{Items: []api.MetricsToken{}}
	for _, t := range ts {
		if t.Kind == store.TokenMetrics {
			out.Items = append(out.Items, metricsTokenView(t))
		}
	}
	out.Total = len(out.Items)
	return http.StatusOK, out, nil
}

func (s *Service) handleRevokeMetricsToken(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	if err := httpapi.Authorize(ctx, s.log, c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	id := r.PathValue("id")
	t, err := s.store.GetToken(ctx, id)
	if err == nil && t.Kind != store.TokenMetrics {
		err = store.ErrNotFound
	}
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeAccessTokenNotFound, fmt.Sprintf("scrape token %q", id))
	}
	if t.RevokedAt == nil {
		if err := s.store.RevokeToken(ctx, t.ID, s.opts.Now().UTC()); err != nil {
			return 0, nil, err
		}
		s.log.Info("scrape token revoked", "user", c.UserID, "token_id", t.ID)
	}
	return http.StatusNoContent, nil, nil
}
