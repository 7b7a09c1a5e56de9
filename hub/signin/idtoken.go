package signin

import (
	"context"
	"errors"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/scion-go/scion/api"
)

// Identity is what a verified ID token says about the user.
type Identity struct {
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// VerifyIDToken checks the ID token's signature (the provider's JWKS),
// issuer, audience (the Hub's client ID) and expiry, and reads its claims.
// A refusal is a 401 with the reason, logged without the token.
func (o *Client) VerifyIDToken(ctx context.Context, p *Provider, raw string) (*Identity, error) {
	refuse := func(reason string) error {
		o.log.Warn("oidc sign-in refused", "reason", reason)
		return api.Unauthorized("the identity provider's ID token was refused: " + reason)
	}
	t, err := p.verifier.Verify(oidc.ClientContext(ctx, o.hc), raw)
	if err != nil {
		return nil, refuse(idTokenRefusal(err))
	}
	var c struct {
		Email             string `json:"email"`
		EmailVerified     any    `json:"email_verified"` // a bool, or "true" from some providers
		Name              string `json:"name"`
		PreferredUsername string `json:"preferred_username"`
	}
	if err := t.Claims(&c); err != nil {
		return nil, refuse("ID token claims unreadable")
	}
	if t.Subject == "" || len(t.Subject) > 255 {
		return nil, refuse("ID token has no usable subject")
	}
	verified := false
	switch v := c.EmailVerified.(type) {
	case bool:
		verified = v
	case string:
		verified = strings.EqualFold(v, "true")
	}
	id := &Identity{Subject: t.Subject, Email: strings.TrimSpace(c.Email), EmailVerified: verified}
	shownEmail := "" // an unverified address is not shown as the user's name
	if verified {
		shownEmail = id.Email
	}
	id.Name = firstNonEmptyString(strings.TrimSpace(c.Name), strings.TrimSpace(c.PreferredUsername), shownEmail, id.Subject)
	return id, nil
}

// idTokenRefusal names why go-oidc refused a token, without its text
// (which is not ours to promise free of token material).
func idTokenRefusal(err error) string {
	var te *oidc.TokenExpiredError
	if errors.As(err, &te) {
		return "ID token expired"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "audience"):
		return "ID token is for another audience"
	case strings.Contains(msg, "signature"):
		return "ID token signature does not verify"
	case strings.Contains(msg, "different provider"), strings.Contains(msg, "issuer"):
		return "ID token is from another issuer"
	case strings.Contains(msg, "before"):
		return "ID token is not valid yet"
	case strings.Contains(msg, "malformed"):
		return "ID token is malformed"
	}
	return "ID token invalid"
}
