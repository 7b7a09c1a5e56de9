// Package authz decides who may do what on the Hub. Everything here is a
// pure function over plain values: handlers load the caller and the
// resource, ask Can (or Visible, Dispatchable, CanDelegate), and turn a
// refusal into the answer the spec names (403, or 404 for what the caller
// cannot see).
//
// There are four kinds of caller:
//
//   - a signed-in user, with a Hub role: admin, member or viewer;
//   - a user access token: one project, a set of scopes, and never more
//     than its owner could do; it can never carry broker read or dispatch;
//   - an agent, with its project, its agent role and its scopes;
//   - a Runtime Broker, which only reaches its own channel and record.
package authz

import "slices"

// Kind is a kind of caller.
type Kind string

// Caller kinds.
const (
	User   Kind = "user"
	Token  Kind = "token" // user access token
	Agent  Kind = "agent"
	Broker Kind = "broker"
)

// Hub roles of users.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Agent roles. A coordinator may act on every agent of its project; it is
// a privileged role, so only a hub admin or another coordinator can hand
// it out (see CanDelegate).
const (
	AgentRoleWorker      = "worker"
	AgentRoleCoordinator = "coordinator"
)

// Token and agent scopes. A user access token names its scopes; an agent
// gets its scopes from whoever created it.
const (
	ScopeProjectRead          = "project:read"
	ScopeProjectUpdate        = "project:update"
	ScopeAgentRead            = "project:agent:read"
	ScopeAgentCreate          = "project:agent:create"
	ScopeAgentLifecycle       = "project:agent:lifecycle"
	ScopeProjectSecretsUpdate = "project:secret:update"
)

// Scopes lists every scope a token may carry. Broker read and dispatch
// are deliberately absent: a token is single-project and cannot reach
// brokers beyond the ones AutoProvide opens to everyone.
var Scopes = []string{ScopeProjectRead, ScopeProjectUpdate, ScopeAgentRead, ScopeAgentCreate,
	ScopeAgentLifecycle, ScopeProjectSecretsUpdate}

// ValidScope reports whether s is a scope a token may carry.
func ValidScope(s string) bool { return slices.Contains(Scopes, s) }

// Caller is an authenticated identity.
type Caller struct {
	Kind Kind
	// ID is the user's, agent's or broker's ID; for a token, the token's.
	ID string
	// Name is for people: a user's name, an agent's slug, a broker's name.
	Name string
	// UserID is the accountable user: the user itself, or a token's owner.
	UserID string
	// Role is the Hub role of a user (of a token's owner), or an agent's
	// agent role.
	Role string
	// ProjectID confines a token or an agent to one project.
	ProjectID string
	Scopes    []string
	// Passthrough is the cloud identity an agent runs with ("" = none).
	Passthrough string
}

// HasScope reports whether c carries scope s.
func (c Caller) HasScope(s string) bool { return slices.Contains(c.Scopes, s) }

// Principal names c in delegation chains and as a recorded delegator:
// "user:<id>" or "agent:<id>". A token acts for its owner.
func (c Caller) Principal() string {
	switch c.Kind {
	case User, Token:
		return "user:" + c.UserID
	case Agent:
		return "agent:" + c.ID
	}
	return string(c.Kind) + ":" + c.ID
}
