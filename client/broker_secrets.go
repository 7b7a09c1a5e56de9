package client

import (
	"context"
	"net/http"

	"github.com/scion-go/scion/api"
)

// Broker-scoped secrets (hub admins): a spoke's kubeconfig or a bastion
// key, delivered to that one broker only. Only the broker reads a value
// (wire.FetchBrokerSecret, with its signed headers); this client never
// can.

// PutBrokerSecret sets secret name of broker (ID or name).
func (c *Client) PutBrokerSecret(ctx context.Context, broker, name, value string) (*api.BrokerSecret, error) {
	b, err := segment("broker", broker)
	if err != nil {
		return nil, err
	}
	s, err := segment("secret", name)
	if err != nil {
		return nil, err
	}
	var out api.BrokerSecret
	if err := c.do(ctx, request{method: http.MethodPut, path: apiPath("runtime-brokers", b, "secrets", s),
		body: api.PutSecretRequest{Value: value}}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListBrokerSecrets lists the names of broker's secrets.
func (c *Client) ListBrokerSecrets(ctx context.Context, broker string) ([]api.BrokerSecret, error) {
	b, err := segment("broker", broker)
	if err != nil {
		return nil, err
	}
	var l api.List[api.BrokerSecret]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("runtime-brokers", b, "secrets")}, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// DeleteBrokerSecret deletes secret name of broker.
func (c *Client) DeleteBrokerSecret(ctx context.Context, broker, name string) error {
	b, err := segment("broker", broker)
	if err != nil {
		return err
	}
	s, err := segment("secret", name)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: http.MethodDelete, path: apiPath("runtime-brokers", b, "secrets", s)}, nil)
}
