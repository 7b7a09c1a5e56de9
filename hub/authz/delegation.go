package authz

import "slices"

// AgentRoles are the roles an agent may have; "" means worker.
var AgentRoles = []string{AgentRoleWorker, AgentRoleCoordinator}

// ValidAgentRole reports whether role names an agent role.
func ValidAgentRole(role string) bool { return role == "" || slices.Contains(AgentRoles, role) }

// privileged roles can only be handed out by a hub admin or by an agent
// that holds the role itself.
func privileged(role string) bool { return role == AgentRoleCoordinator }

// CanDelegate decides whether c may give an agent role to someone: to
// create an agent with it, to change an agent to it, or to act on an
// agent that has it (start, restart, resume run the agent again under
// its role, so the caller must be able to delegate that role).
func CanDelegate(c Caller, role string) *Refusal {
	if !privileged(role) {
		return nil
	}
	switch {
	case c.Kind == User && c.Role == RoleAdmin:
		return nil
	case c.Kind == Agent && c.Role == role:
		return nil
	}
	return deny("only a hub admin can delegate the %s role", role)
}

// Delegation is who is accountable for a new agent.
type Delegation struct {
	// Delegator is the accountable principal.
	Delegator string
	// Chain lists the principals from the accountable user down to the
	// creator ("user:u1", "agent:a7", ...).
	Chain []string
}

// NewDelegation records the delegation of an agent that c creates. An
// agent's child inherits its parent's delegator (the user stays
// accountable) and extends its chain.
func NewDelegation(c Caller, parentDelegator string, parentChain []string) Delegation {
	if c.Kind == Agent {
		chain := append(slices.Clone(parentChain), c.Principal())
		return Delegation{Delegator: parentDelegator, Chain: chain}
	}
	return Delegation{Delegator: c.Principal(), Chain: []string{c.Principal()}}
}

// Redelegate says who the recorded delegator is after c re-runs an agent
// (start, restart, resume) or changes its role: a role change makes the
// caller the delegator, and so does a user re-running an agent with no
// recorded provenance. Otherwise the agent keeps its delegator.
func Redelegate(c Caller, current string, roleChange bool) string {
	if roleChange || (current == "" && (c.Kind == User || c.Kind == Token)) {
		return c.Principal()
	}
	return current
}

// CanUsePassthrough decides whether c may create an agent that runs with
// a cloud passthrough identity: only a signed-in user can lend one.
func CanUsePassthrough(c Caller) *Refusal {
	if c.Kind == User && (c.Role == RoleAdmin || c.Role == RoleMember) {
		return nil
	}
	return deny("only a signed-in user can start an agent with a passthrough identity")
}

// PassthroughCapability is the capability a broker reports when it allows
// agents with passthrough identity kind (e.g. "passthrough:gcp").
func PassthroughCapability(kind string) string { return "passthrough:" + kind }

// PassthroughAllowed decides whether a broker with caps may run an agent
// with the passthrough identity kind ("" = none, always allowed).
func PassthroughAllowed(kind string, caps []string) *Refusal {
	if kind == "" || slices.Contains(caps, PassthroughCapability(kind)) {
		return nil
	}
	return deny("this runtime broker does not allow agents with a %s passthrough identity", kind)
}

// AgentScopeNames are the scopes an agent may carry.
var AgentScopeNames = []string{ScopeAgentCreate}

// AgentScopes decides the scopes of an agent that c creates. Nil asks for
// the default: what the creator can hand on (a user or token: the right to
// start agents; an agent: its own scopes). A creator hands on only scopes
// it holds itself.
func AgentScopes(c Caller, requested []string) ([]string, *Refusal) {
	held := func(s string) bool { return c.Kind == User || c.HasScope(s) }
	if requested == nil {
		out := []string{}
		for _, s := range AgentScopeNames {
			if held(s) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	out := make([]string, 0, len(requested))
	for _, s := range requested {
		if !slices.Contains(AgentScopeNames, s) {
			return nil, deny("scope %q cannot be given to an agent (agent scopes: %v)", s, AgentScopeNames)
		}
		if !held(s) {
			return nil, deny("you cannot hand on the %s scope: you do not hold it", s)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// CanRefreshAgentToken: only an agent renews an agent token, and only its
// own (the caller's token names the agent; a user or an access token has
// none to renew).
func CanRefreshAgentToken(c Caller) *Refusal {
	if c.Kind == Agent {
		return nil
	}
	return deny("only an agent renews its agent token, with its current one")
}
