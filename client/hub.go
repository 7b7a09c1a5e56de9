package client

import (
	"context"
	"net/http"

	"github.com/scion-go/scion/api"
)

// Whoami returns the caller the Hub sees for this client's token.
func (c *Client) Whoami(ctx context.Context) (*api.Whoami, error) {
	var w api.Whoami
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("auth", "whoami")}, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// GetSettings returns the hub-wide settings (agent defaults).
func (c *Client) GetSettings(ctx context.Context) (*api.HubSettings, error) {
	s, _, err := c.GetSettingsETag(ctx)
	return s, err
}

// GetSettingsETag returns the hub-wide settings and their ETag, for a
// conditional UpdateSettings.
func (c *Client) GetSettingsETag(ctx context.Context) (*api.HubSettings, string, error) {
	var s api.HubSettings
	var h http.Header
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("settings"), respHeader: &h}, &s); err != nil {
		return nil, "", err
	}
	return &s, h.Get("ETag"), nil
}

// PutSettings writes a whole settings document (admin): every default
// and every experiment it names; an empty default in it is left out and
// so kept. UpdateSettings changes only what it names.
func (c *Client) PutSettings(ctx context.Context, s api.HubSettings) (*api.HubSettings, error) {
	var out api.HubSettings
	if err := c.do(ctx, request{method: http.MethodPut, path: apiPath("settings"), body: s}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateSettings changes the settings u names and nothing else (admin).
// With ifMatch (an ETag from GetSettingsETag or an earlier update) the
// Hub writes only if nobody wrote since: 412 precondition_failed
// otherwise. It returns the settings as stored and their new ETag.
func (c *Client) UpdateSettings(ctx context.Context, u api.HubSettingsUpdate, ifMatch string) (*api.HubSettings, string, error) {
	var out api.HubSettings
	var h http.Header
	r := request{method: http.MethodPut, path: apiPath("settings"), body: u, respHeader: &h}
	if ifMatch != "" {
		r.header = http.Header{"If-Match": {ifMatch}}
	}
	if err := c.do(ctx, r, &out); err != nil {
		return nil, "", err
	}
	return &out, h.Get("ETag"), nil
}

// GetLimits returns the hub-wide limits.
func (c *Client) GetLimits(ctx context.Context) (*api.Limits, error) {
	var l api.Limits
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("admin", "limits")}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// PutLimits replaces the hub-wide limits (admin).
func (c *Client) PutLimits(ctx context.Context, l api.Limits) (*api.Limits, error) {
	var out api.Limits
	if err := c.do(ctx, request{method: http.MethodPut, path: apiPath("admin", "limits"), body: l}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Healthz checks GET /healthz (outside /api/v1, no caller needed).
func (c *Client) Healthz(ctx context.Context) (*api.Health, error) {
	var h api.Health
	if err := c.do(ctx, request{method: http.MethodGet, path: "/healthz", noAuth: true}, &h); err != nil {
		return nil, err
	}
	return &h, nil
}
