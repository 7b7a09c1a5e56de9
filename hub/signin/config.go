package signin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/scion-go/scion/api"
)

// Config turns on OIDC sign-in for users (scion hub auth login runs a
// device flow through the Hub). Nil leaves only Hub-issued tokens.
type Config struct {
	// IssuerURL is the provider's issuer (its discovery document lives at
	// IssuerURL/.well-known/openid-configuration).
	IssuerURL string
	// ClientID and ClientSecret identify the Hub at the provider.
	ClientID     string
	ClientSecret string
	// DefaultRole is the Hub role of a user's first sign-in (default viewer).
	DefaultRole string
	// AdminEmails get the admin role at their first sign-in, when the
	// provider says the email is verified. Compared without case.
	AdminEmails []string
	// RequestsPerMinute and Burst bound the sign-in requests of one client
	// address (defaults 120 a minute, bursts of 30: a CLI polls every 5 s
	// or slower, so ten sign-ins at once can share one address, as behind a
	// proxy or a NAT).
	RequestsPerMinute int
	Burst             int
}

// Validate reports a configuration the Hub cannot sign anyone in with.
func (c *Config) Validate() error {
	if c.IssuerURL == "" || c.ClientID == "" {
		return fmt.Errorf("oidc: the issuer URL and the client ID are both required")
	}
	if !strings.HasPrefix(c.IssuerURL, "https://") && !strings.HasPrefix(c.IssuerURL, "http://") {
		return fmt.Errorf("oidc: issuer %q is not an http(s) URL", c.IssuerURL)
	}
	switch c.DefaultRole {
	case "", api.RoleViewer, api.RoleMember, api.RoleAdmin:
	default:
		return fmt.Errorf("oidc: default role %q is not one of admin, member, viewer", c.DefaultRole)
	}
	return nil
}

// RoleFor is the Hub role of a user's first sign-in.
func (c *Config) RoleFor(email string, verified bool) string {
	if verified && email != "" && slices.ContainsFunc(c.AdminEmails, func(a string) bool {
		return strings.EqualFold(strings.TrimSpace(a), email)
	}) {
		return api.RoleAdmin
	}
	if c.DefaultRole == "" {
		return api.RoleViewer
	}
	return c.DefaultRole
}
