package authz

// SecretRes is a secret an agent create names, as authorization needs it.
// The secret's project is Resource.Project (nil for a hub-wide secret).
type SecretRes struct {
	Name string
	// Held: the caller is an agent that was given this secret itself.
	Held bool
}

// secretUseCan decides SecretUse: naming a secret in an agent one
// creates. The value reaches a container its creator controls (its
// command can print it), so naming a secret is reading its value, which
// the API gives no one: it needs what setting the secret needs.
//
//   - A project secret: project.update on the project (its owner or a hub
//     admin), as `scion hub secret set --project` does. A token also needs
//     the project:agent:create scope, with which it creates the agent.
//   - A hub-wide secret: a hub admin sets it for every agent creator of
//     the Hub (an API key all agents share), so any caller that may create
//     agents may name it.
//   - An agent hands on only the secrets it was given itself.
func secretUseCan(c Caller, r Resource) *Refusal {
	name := ""
	if r.Secret != nil {
		name = r.Secret.Name
	}
	switch c.Kind {
	case Agent:
		if r.Project != nil && r.Project.ID != c.ProjectID {
			return hidden("outside the agent's project")
		}
		if r.Secret == nil || !r.Secret.Held {
			return deny("an agent can hand on only the secrets it was given; %q is not one of them", name)
		}
		return nil
	case Token:
		if !c.HasScope(ScopeAgentCreate) {
			return deny("naming a secret in an agent needs a token with the %s scope", ScopeAgentCreate)
		}
		if r.Project != nil && r.Project.ID != c.ProjectID {
			return hidden("outside the token's project")
		}
	case User:
	default:
		return deny("%s callers cannot name secrets", c.Kind)
	}
	switch {
	case c.Role == RoleAdmin:
		return nil
	case c.Role != RoleMember:
		return deny("the %s role is read-only; naming a secret needs the member or admin role", roleName(c.Role))
	case r.Project == nil:
		return nil // hub-wide: shared with every agent creator
	case r.Project.Owner == c.UserID:
		return nil
	}
	return deny("secret %q belongs to project %s: naming it hands its value to your agent, which needs %s on the project (its owner or a hub admin)",
		name, r.Project.ID, ProjectUpdate)
}
