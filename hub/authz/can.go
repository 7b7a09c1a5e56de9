package authz

import "fmt"

// Action is something a caller does to a resource. The names the spec
// gives are used as they are (agent.lifecycle, broker.read,
// broker.dispatch, project.update).
type Action string

// Actions.
const (
	Whoami         Action = "auth.whoami"
	ProjectCreate  Action = "project.create"
	ProjectRead    Action = "project.read"
	ProjectUpdate  Action = "project.update"
	ProjectDelete  Action = "project.delete"
	BrokerRegister Action = "broker.register"
	BrokerRead     Action = "broker.read"
	// BrokerManage changes a broker's record: settings, AutoProvide,
	// deregistration. Its owner (who registered it) and admins hold it.
	BrokerManage Action = "broker.manage"
	// BrokerDeregister removes a broker: its owner, an admin, or the
	// broker itself.
	BrokerDeregister Action = "broker.deregister"
	BrokerDispatch   Action = "broker.dispatch"
	JoinTokenCreate  Action = "broker.join_token.create"
	AgentCreate      Action = "agent.create"
	AgentRead        Action = "agent.read"
	AgentLifecycle   Action = "agent.lifecycle"
	HubRead          Action = "hub.read"  // hub settings and limits
	HubAdmin         Action = "hub.admin" // changing them
	TokenManage      Action = "token.manage"
	UserManage       Action = "user.manage" // list users, change their Hub role
	SecretRead       Action = "secret.read" // names and metadata, never values
	SecretWrite      Action = "secret.write"
	// SecretUse is naming a secret in an agent create: its value reaches
	// the new agent (see secretUseCan).
	SecretUse Action = "secret.use"
	// AgentTokenRefresh is an agent renewing its own token.
	AgentTokenRefresh Action = "agent.token.refresh"
)

// Project is what authorization needs to know about a project.
type Project struct {
	ID string
	// Owner is the ID of the user who created it.
	Owner string
}

// AgentRes is what authorization needs to know about an agent.
type AgentRes struct {
	ID, ProjectID string
	Role          string
	// CreatedBy and Delegator are principals ("user:<id>", "agent:<id>").
	CreatedBy, Delegator string
	ParentAgentID        string
	Passthrough          string
}

// BrokerRes is what authorization needs to know about a Runtime Broker,
// seen from the project at hand.
type BrokerRes struct {
	ID string
	// Owner is the ID of the user who registered it.
	Owner       string
	AutoProvide bool
	// ServesProject: the broker provides for the project in question (the
	// caller's, the agent's, or the one being created in).
	ServesProject bool
}

// Resource is the object of an action; only the parts the action needs
// are set. A nil Project with a Secret action means a hub-wide secret.
type Resource struct {
	Project *Project
	Agent   *AgentRes
	Broker  *BrokerRes
	Secret  *SecretRes
}

// Refusal is a denied decision. Hidden means the caller may not even know
// the resource exists: the Hub answers 404 exactly as for an unknown one.
type Refusal struct {
	Hidden bool
	Reason string
}

func (r *Refusal) Error() string {
	if r.Hidden {
		return "not visible: " + r.Reason
	}
	return r.Reason
}

func deny(format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}

func hidden(what string) *Refusal { return &Refusal{Hidden: true, Reason: what} }

// Can decides whether c may do a on r. It returns nil or a *Refusal.
func Can(c Caller, a Action, r Resource) *Refusal {
	if a == Whoami {
		return nil
	}
	if a == SecretUse {
		return secretUseCan(c, r)
	}
	switch c.Kind {
	case User:
		return userCan(c.UserID, c.Role, a, r)
	case Token:
		return tokenCan(c, a, r)
	case Agent:
		return agentCan(c, a, r)
	case Broker:
		if (a == BrokerRead || a == BrokerDeregister) && r.Broker != nil && r.Broker.ID == c.ID {
			return nil
		}
		return deny("runtime brokers can only reach their own channel and record")
	}
	return deny("unknown caller")
}

// projectOf is the project an action is about.
func projectOf(r Resource) string {
	switch {
	case r.Project != nil:
		return r.Project.ID
	case r.Agent != nil:
		return r.Agent.ProjectID
	}
	return ""
}
