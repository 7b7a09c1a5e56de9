// User access tokens: single-project bearer tokens with scopes, made by a
// signed-in user, stored hashed, shown once, listed and revoked.

package identity

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

const accessTokenPrefix = "scp_"

func accessTokenView(t *store.Token) api.AccessToken {
	return api.AccessToken{ID: t.ID, Name: t.Name, ProjectID: t.ProjectID, Scopes: t.Scopes,
		ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, CreatedAt: t.CreatedAt}
}

func (s *Service) handleCreateAccessToken(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	if err := httpapi.Authorize(ctx, s.log, c, authz.TokenManage, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.CreateAccessTokenRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if err := api.CheckName("token", req.Name); err != nil {
		return 0, nil, err
	}
	if len(req.Scopes) == 0 || len(req.Scopes) > len(authz.Scopes) {
		return 0, nil, api.BadRequest("a token needs at least one scope: %v", authz.Scopes)
	}
	for _, sc := range req.Scopes {
		if !authz.ValidScope(sc) {
			return 0, nil, api.BadRequest("invalid scope %q: a token may carry %v (never broker read or dispatch)", sc, authz.Scopes)
		}
	}
	ttl := 30 * 24 * time.Hour
	if req.ExpiresIn != "" {
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 || d > 365*24*time.Hour {
			return 0, nil, api.BadRequest("expiresIn must be a positive Go duration up to 8760h")
		}
		ttl = d
	}
	p, err := s.opts.LoadProject(ctx, c, req.Project, authz.ProjectRead)
	if err != nil {
		return 0, nil, err
	}
	tok := accessTokenPrefix + base64.RawURLEncoding.EncodeToString(NewSecret(32))
	now := s.opts.Now().UTC()
	exp := now.Add(ttl)
	t := &store.Token{ID: httpapi.NewID(), Hash: HashToken(tok), Kind: store.TokenUser, UserID: c.UserID, ProjectID: p.ID,
		Scopes: req.Scopes, Name: req.Name, ExpiresAt: &exp, CreatedAt: now}
	if err := s.store.CreateToken(ctx, t); err != nil {
		return 0, nil, err
	}
	s.log.Info("access token created", "user", c.UserID, "token_id", t.ID, "project", p.ID, "scopes", req.Scopes)
	v := accessTokenView(t)
	v.Token = tok
	return http.StatusCreated, v, nil
}

func (s *Service) handleListAccessTokens(r *http.Request, c *authz.Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.TokenManage, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	ts, err := s.store.ListTokens(r.Context(), c.UserID)
	if err != nil {
		return 0, nil, err
	}
	out := api.List[api.AccessToken]{Items: []api.AccessToken{}}
	for _, t := range ts {
		if t.ProjectID != "" { // sign-in tokens are not access tokens
			out.Items = append(out.Items, accessTokenView(t))
		}
	}
	out.Total = len(out.Items)
	return http.StatusOK, out, nil
}

func (s *Service) handleRevokeAccessToken(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	if err := httpapi.Authorize(ctx, s.log, c, authz.TokenManage, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	id := r.PathValue("id")
	t, err := s.store.GetToken(ctx, id)
	// Someone else's token is answered like an unknown one (admins may
	// revoke any).
	if err == nil && (t.ProjectID == "" || (t.UserID != c.UserID && c.Role != api.RoleAdmin)) {
		err = store.ErrNotFound
	}
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeAccessTokenNotFound, fmt.Sprintf("access token %q", id))
	}
	if t.RevokedAt == nil {
		if err := s.store.RevokeToken(ctx, t.ID, time.Now().UTC()); err != nil {
			return 0, nil, err
		}
		s.log.Info("access token revoked", "token_id", t.ID, "by", c.Principal())
	}
	return http.StatusNoContent, nil, nil
}
