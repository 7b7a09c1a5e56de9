package api

// OIDC sign-in through the Hub (an RFC 8628 device flow that the Hub runs
// against its OIDC provider, so the CLI only ever talks to the Hub):
//
//	POST /api/v1/auth/device        (no caller)  -> DeviceAuthorization
//	POST /api/v1/auth/device/token  (no caller)  DeviceTokenRequest -> SignIn
//
// The token call answers 400 authorization_pending until the user approves
// at the provider, 400 slow_down when polled faster than Interval (add 5
// seconds to the interval), 400 expired_token and 400 access_denied when
// the flow is over. Both routes answer 501 oidc_not_configured on a Hub
// without OIDC, and 429 rate_limited when one client address asks too often.

// The sign-in routes' own codes (CodeAuthorizationPending, CodeSlowDown,
// CodeExpiredToken, CodeAccessDenied, CodeOIDCNotConfigured,
// CodeOIDCProviderError) are in codes.go with every other code.

// DeviceAuthorization starts a device sign-in: the user opens
// VerificationURIComplete (or VerificationURI and types UserCode) while
// the client polls POST /auth/device/token with DeviceCode every Interval
// seconds, for at most ExpiresIn seconds.
type DeviceAuthorization struct {
	DeviceCode              string `json:"deviceCode"`
	UserCode                string `json:"userCode"`
	VerificationURI         string `json:"verificationUri"`
	VerificationURIComplete string `json:"verificationUriComplete,omitempty"`
	ExpiresIn               int    `json:"expiresIn"`
	Interval                int    `json:"interval"`
}

// DeviceTokenRequest is the body of POST /auth/device/token.
type DeviceTokenRequest struct {
	DeviceCode string `json:"deviceCode"`
}

// SignIn is a finished sign-in: a Hub user token (scu_..., shown once)
// and the user it belongs to.
type SignIn struct {
	Token string `json:"token"`
	User  User   `json:"user"`
}
