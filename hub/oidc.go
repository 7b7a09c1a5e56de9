package hub

// OIDCConfig turns on OIDC sign-in for users (scion hub auth login runs a
// device flow through the Hub). Nil leaves only Hub-issued tokens.
type OIDCConfig struct {
	// IssuerURL is the provider's issuer (its discovery document lives at
	// IssuerURL/.well-known/openid-configuration).
	IssuerURL string
	// ClientID and ClientSecret identify the Hub at the provider.
	ClientID     string
	ClientSecret string
	// DefaultRole is the Hub role of a user's first sign-in (default viewer).
	DefaultRole string
	// AdminEmails get the admin role at their first sign-in.
	AdminEmails []string
}

// oidcRoutes are the sign-in routes; they need no caller.
func (s *Server) oidcRoutes() []Route { return nil }
