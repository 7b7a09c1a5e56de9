package hub

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// identity is what a verified ID token says about the user.
type identity struct {
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// verifyIDToken checks the ID token's signature (the provider's JWKS),
// issuer, audience (the Hub's client ID) and expiry, and reads its claims.
// A refusal is a 401 with the reason, logged without the token.
func (o *oidcSignIn) verifyIDToken(ctx context.Context, p *providerInfo, raw string) (*identity, error) {
	refuse := func(reason string) error {
		o.s.log.Warn("oidc sign-in refused", "reason", reason)
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
	id := &identity{Subject: t.Subject, Email: strings.TrimSpace(c.Email), EmailVerified: verified}
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

// signInUser finds the user of an OIDC identity, or creates it at its
// first sign-in with the role the configuration gives. Later sign-ins keep
// the stored role, whatever the configuration says now.
func (o *oidcSignIn) signInUser(ctx context.Context, id *identity) (*store.User, bool, error) {
	st, issuer := o.s.store, o.cfg.IssuerURL
	u, err := st.GetUserBySubject(ctx, issuer, id.Subject)
	if err == nil {
		return u, false, nil
	}
	if !isNotFound(err) {
		return nil, false, err
	}
	email := ""
	if id.EmailVerified {
		email = id.Email // an unverified address is not recorded as the user's
	}
	u = &store.User{ID: mustV7(), Name: id.Name, Email: email, Role: o.cfg.roleFor(id.Email, id.EmailVerified),
		Issuer: issuer, Subject: id.Subject, CreatedAt: time.Now().UTC()}
	if err := st.CreateUser(ctx, u); err != nil {
		if !isExists(err) {
			return nil, false, err
		}
		// A concurrent first sign-in of the same identity won.
		u, err = st.GetUserBySubject(ctx, issuer, id.Subject)
		return u, false, err
	}
	return u, true, nil
}
