package client

import (
	"context"
	"net/http"

	"github.com/scion-go/scion/api"
)

// StartDeviceSignIn starts an OIDC device sign-in through the Hub (no
// caller needed). Show the user VerificationURIComplete, or
// VerificationURI and UserCode, then poll PollDeviceSignIn.
func (c *Client) StartDeviceSignIn(ctx context.Context) (*api.DeviceAuthorization, error) {
	var d api.DeviceAuthorization
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("auth", "device"), noAuth: true}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// PollDeviceSignIn asks once whether the user has approved the sign-in.
// Until then it returns an *api.Error with code authorization_pending (or
// slow_down: poll 5 seconds less often); expired_token and access_denied
// end the flow. On success the Hub user token is in SignIn.Token.
func (c *Client) PollDeviceSignIn(ctx context.Context, deviceCode string) (*api.SignIn, error) {
	var s api.SignIn
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("auth", "device", "token"), noAuth: true,
		body: api.DeviceTokenRequest{DeviceCode: deviceCode}}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// RefreshAgentToken trades the client's agent token, while it is still
// valid, for a new one with a full lifetime.
func (c *Client) RefreshAgentToken(ctx context.Context) (*api.AgentToken, error) {
	var t api.AgentToken
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("auth", "agent-token")}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
