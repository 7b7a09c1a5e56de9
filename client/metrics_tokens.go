package client

import (
	"context"
	"net/http"

	"github.com/scion-go/scion/api"
)

// CreateMetricsToken makes a scrape token for GET /metrics (admin); its
// value is in the answer only.
func (c *Client) CreateMetricsToken(ctx context.Context, req api.CreateMetricsTokenRequest) (*api.MetricsToken, error) {
	var t api.MetricsToken
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("admin", "metrics-tokens"), body: req}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListMetricsTokens lists the caller's scrape tokens (without secrets).
func (c *Client) ListMetricsTokens(ctx context.Context) ([]api.MetricsToken, error) {
	var l api.List[api.MetricsToken]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("admin", "metrics-tokens")}, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// RevokeMetricsToken revokes a scrape token by ID (admin).
func (c *Client) RevokeMetricsToken(ctx context.Context, id string) error {
	s, err := segment("token", id)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: http.MethodDelete, path: apiPath("admin", "metrics-tokens", s)}, nil)
}
