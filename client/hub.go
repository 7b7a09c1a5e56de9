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
	var s api.HubSettings
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("settings")}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// PutSettings replaces the hub-wide settings (admin).
func (c *Client) PutSettings(ctx context.Context, s api.HubSettings) (*api.HubSettings, error) {
	var out api.HubSettings
	if err := c.do(ctx, request{method: http.MethodPut, path: apiPath("settings"), body: s}, &out); err != nil {
		return nil, err
	}
	return &out, nil
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
