package authz

// agentCan: an agent works inside its project. It reads the project and
// its agents, acts on itself with no extra permission, creates agents only
// with the project:agent:create scope, acts on another agent only with
// agent.lifecycle (as its parent or as a coordinator), and never updates
// projects, brokers or the Hub.
func agentCan(c Caller, a Action, r Resource) *Refusal {
	p := projectOf(r)
	switch a {
	case ProjectUpdate, ProjectDelete, ProjectCreate:
		return deny("agents cannot change projects; ask a user")
	case BrokerRead, BrokerManage, BrokerDeregister, BrokerRegister, JoinTokenCreate, HubRead, HubAdmin, TokenManage, SecretRead, SecretWrite:
		return deny("agents cannot do %s", a)
	case BrokerDispatch:
		// Dispatchable reaches the broker question; here only the scope.
		return nil
	}
	if p != c.ProjectID {
		return hidden("outside the agent's project")
	}
	switch a {
	case ProjectRead, AgentRead:
		return nil
	case AgentCreate:
		if c.HasScope(ScopeAgentCreate) {
			return nil
		}
		return deny("creating agents needs the %s scope, which this agent was not given", ScopeAgentCreate)
	case AgentLifecycle:
		ag := r.Agent
		switch {
		case ag == nil:
			return deny("no agent")
		case ag.ID == c.ID:
			return nil // an agent acts for itself
		case ag.ParentAgentID == c.ID, ag.CreatedBy == "agent:"+c.ID, c.Role == AgentRoleCoordinator:
			return nil
		}
		return deny("%s on agent %s needs this agent to be its parent or a coordinator", a, ag.ID)
	}
	return deny("agents cannot do %s", a)
}
