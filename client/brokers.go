package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/scion-go/scion/api"
)

// RegisterBroker registers a Runtime Broker as the signed-in user and
// returns its credentials, which the Hub issues only this once.
func (c *Client) RegisterBroker(ctx context.Context, req api.RegisterBrokerRequest) (*api.BrokerCredentials, error) {
	var cr api.BrokerCredentials
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("runtime-brokers"), body: req}, &cr); err != nil {
		return nil, err
	}
	return &cr, nil
}

// JoinBroker registers a Runtime Broker with a one-time join token. It
// sends no bearer token: the join token is the credential.
func (c *Client) JoinBroker(ctx context.Context, token, name string) (*api.BrokerCredentials, error) {
	return c.JoinBrokerRequest(ctx, api.RegisterBrokerRequest{Name: name, JoinToken: token})
}

// JoinBrokerRequest is JoinBroker with the whole request (a flat
// instance's join names its RuntimeTarget); req.JoinToken is required.
func (c *Client) JoinBrokerRequest(ctx context.Context, req api.RegisterBrokerRequest) (*api.BrokerCredentials, error) {
	var cr api.BrokerCredentials
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("runtime-brokers", "join"), body: req, noAuth: true}, &cr); err != nil {
		return nil, err
	}
	return &cr, nil
}

// CreateJoinToken creates a one-time join token (admin).
func (c *Client) CreateJoinToken(ctx context.Context, req api.CreateJoinTokenRequest) (*api.JoinToken, error) {
	var t api.JoinToken
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("runtime-brokers", "join-tokens"), body: req}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListBrokers returns one page of Runtime Brokers.
func (c *Client) ListBrokers(ctx context.Context, cursor string, limit int) (*api.List[api.RuntimeBroker], error) {
	var l api.List[api.RuntimeBroker]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("runtime-brokers"), query: pageQuery(cursor, limit)}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListAllBrokers follows the cursors and returns every Runtime Broker.
func (c *Client) ListAllBrokers(ctx context.Context) ([]api.RuntimeBroker, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) (*api.List[api.RuntimeBroker], error) {
		return c.ListBrokers(ctx, cursor, allPageSize)
	})
}

// GetBroker returns a Runtime Broker by ID or name.
func (c *Client) GetBroker(ctx context.Context, broker string) (*api.RuntimeBroker, error) {
	return c.brokerCall(ctx, http.MethodGet, broker, nil)
}

// UpdateBroker changes a Runtime Broker's settings.
func (c *Client) UpdateBroker(ctx context.Context, broker string, req api.UpdateBrokerRequest) (*api.RuntimeBroker, error) {
	return c.brokerCall(ctx, http.MethodPatch, broker, req)
}

// DeregisterBroker removes a Runtime Broker's registration.
func (c *Client) DeregisterBroker(ctx context.Context, broker string) error {
	return c.deregisterBroker(ctx, broker, false)
}

// ForceDeregisterBroker deregisters a broker that still has agents: they
// are left without a broker (409 runtime_broker_missing for what needs
// it) until each is deleted with ForceDeleteAgent.
func (c *Client) ForceDeregisterBroker(ctx context.Context, broker string) error {
	return c.deregisterBroker(ctx, broker, true)
}

func (c *Client) deregisterBroker(ctx context.Context, broker string, force bool) error {
	s, err := segment("runtime broker", broker)
	if err != nil {
		return err
	}
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	return c.do(ctx, request{method: http.MethodDelete, path: apiPath("runtime-brokers", s), query: q}, nil)
}

// ProvideProject authorizes a broker to run the project's agents.
func (c *Client) ProvideProject(ctx context.Context, broker, project string) (*api.RuntimeBroker, error) {
	return c.providerCall(ctx, http.MethodPut, broker, project)
}

// WithdrawProject removes a broker from the project's providers.
func (c *Client) WithdrawProject(ctx context.Context, broker, project string) (*api.RuntimeBroker, error) {
	return c.providerCall(ctx, http.MethodDelete, broker, project)
}

func (c *Client) brokerCall(ctx context.Context, method, broker string, body any) (*api.RuntimeBroker, error) {
	s, err := segment("runtime broker", broker)
	if err != nil {
		return nil, err
	}
	var b api.RuntimeBroker
	if err := c.do(ctx, request{method: method, path: apiPath("runtime-brokers", s), body: body}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

func (c *Client) providerCall(ctx context.Context, method, broker, project string) (*api.RuntimeBroker, error) {
	bs, err := segment("runtime broker", broker)
	if err != nil {
		return nil, err
	}
	ps, err := segment("project", project)
	if err != nil {
		return nil, err
	}
	var b api.RuntimeBroker
	if err := c.do(ctx, request{method: method, path: apiPath("runtime-brokers", bs, "projects", ps)}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}
