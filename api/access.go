package api

import "time"

// User access tokens and Hub secrets.
//
//	POST   /api/v1/auth/tokens          CreateAccessTokenRequest -> AccessToken (201; the token is shown once)
//	GET    /api/v1/auth/tokens          -> List[AccessToken] (the caller's, without secrets)
//	DELETE /api/v1/auth/tokens/{id}     (204; revoke)
//	GET    /api/v1/users                -> List[User] (admin)
//	PATCH  /api/v1/users/{user}         UpdateUserRequest -> User (admin; change a Hub role)
//	PUT    /api/v1/secrets/{name}?project=P   PutSecretRequest -> Secret (no value)
//	GET    /api/v1/secrets?project=P          -> List[Secret] (names only)
//	DELETE /api/v1/secrets/{name}?project=P   (204)

// CreateAccessTokenRequest asks for a single-project user access token.
type CreateAccessTokenRequest struct {
	Name    string   `json:"name"`
	Project string   `json:"project"` // name or ID
	Scopes  []string `json:"scopes"`
	// ExpiresIn is a Go duration (default 720h, at most 8760h).
	ExpiresIn string `json:"expiresIn,omitempty"`
}

// AccessToken is a user access token. Token is set only in the answer to
// its creation: the Hub keeps a hash and can never show it again.
type AccessToken struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	ProjectID string     `json:"projectId"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	Token     string     `json:"token,omitempty"`
}

// UpdateAgentRequest is the body of PATCH /agents/{agent}. A role change
// makes the caller the agent's recorded delegator.
type UpdateAgentRequest struct {
	Role *string `json:"role,omitempty"`
}

// UpdateUserRequest is the body of PATCH /users/{user} (admin).
type UpdateUserRequest struct {
	Role *string `json:"role,omitempty"` // admin | member | viewer
}

// PutSecretRequest sets a secret's value.
type PutSecretRequest struct {
	Value string `json:"value"`
}

// Secret describes a Hub secret. Its value never leaves the Hub through
// the API; it reaches only the broker of an agent that names it.
type Secret struct {
	Name      string    `json:"name"`
	ProjectID string    `json:"projectId,omitempty"` // empty: hub-wide
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// MaxSecretValue is the largest secret value, in bytes.
const MaxSecretValue = 64 << 10

// Scrape tokens for the Hub's Prometheus metrics (admin).
//
//	POST   /api/v1/admin/metrics-tokens       CreateMetricsTokenRequest -> MetricsToken (201; the token is shown once)
//	GET    /api/v1/admin/metrics-tokens       -> List[MetricsToken] (the caller's, without secrets)
//	DELETE /api/v1/admin/metrics-tokens/{id}  (204; revoke, any admin)
//
// GET /metrics takes such a token (Authorization: Bearer scm_...) or a
// Hub admin's own; a scrape token works only there, and only while the
// admin who made it is one.

// CreateMetricsTokenRequest asks for a scrape token.
type CreateMetricsTokenRequest struct {
	Name string `json:"name"`
	// ExpiresIn is a Go duration (default 8760h, at most 8760h).
	ExpiresIn string `json:"expiresIn,omitempty"`
}

// MetricsToken is a scrape token. Token is set only in the answer to its
// creation: the Hub keeps a hash.
type MetricsToken struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	Token     string     `json:"token,omitempty"`
}
