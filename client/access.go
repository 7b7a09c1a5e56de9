package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/scion-go/scion/api"
)

// CreateAccessToken makes a single-project user access token. The answer
// carries the token itself; the Hub never shows it again.
func (c *Client) CreateAccessToken(ctx context.Context, req api.CreateAccessTokenRequest) (*api.AccessToken, error) {
	var t api.AccessToken
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("auth", "tokens"), body: req}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListAccessTokens lists the caller's access tokens (without secrets).
func (c *Client) ListAccessTokens(ctx context.Context) ([]api.AccessToken, error) {
	var l api.List[api.AccessToken]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("auth", "tokens")}, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// RevokeAccessToken revokes one of the caller's access tokens by ID.
func (c *Client) RevokeAccessToken(ctx context.Context, id string) error {
	s, err := segment("token", id)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: http.MethodDelete, path: apiPath("auth", "tokens", s)}, nil)
}

func secretQuery(project string) url.Values {
	if project == "" {
		return nil
	}
	return url.Values{"project": {project}}
}

// PutSecret sets a secret of project ("" = hub-wide). The value goes in
// and never comes back out of the API.
func (c *Client) PutSecret(ctx context.Context, project, name, value string) (*api.Secret, error) {
	s, err := segment("secret", name)
	if err != nil {
		return nil, err
	}
	var out api.Secret
	if err := c.do(ctx, request{method: http.MethodPut, path: apiPath("secrets", s), query: secretQuery(project),
		body: api.PutSecretRequest{Value: value}}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSecrets lists the names of project's secrets ("" = hub-wide).
func (c *Client) ListSecrets(ctx context.Context, project string) ([]api.Secret, error) {
	var l api.List[api.Secret]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("secrets"), query: secretQuery(project)}, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// DeleteSecret deletes a secret of project ("" = hub-wide).
func (c *Client) DeleteSecret(ctx context.Context, project, name string) error {
	s, err := segment("secret", name)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: http.MethodDelete, path: apiPath("secrets", s), query: secretQuery(project)}, nil)
}

// ListUsers lists the Hub's users (admin).
func (c *Client) ListUsers(ctx context.Context) ([]api.User, error) {
	var l api.List[api.User]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("users")}, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// SetUserRole changes a user's Hub role (admin).
func (c *Client) SetUserRole(ctx context.Context, user, role string) (*api.User, error) {
	s, err := segment("user", user)
	if err != nil {
		return nil, err
	}
	var u api.User
	if err := c.do(ctx, request{method: http.MethodPatch, path: apiPath("users", s), body: api.UpdateUserRequest{Role: &role}}, &u); err != nil {
		return nil, err
	}
	return &u, nil
}
