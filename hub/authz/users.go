package authz

// userCan is what a signed-in user with a Hub role may do. Admins do
// everything. Members create projects and agents, read and dispatch to
// every broker, and change what they own: their projects, their brokers,
// and the agents they are accountable for. Viewers read.
func userCan(userID, role string, a Action, r Resource) *Refusal {
	if role == RoleAdmin {
		return nil
	}
	switch a {
	case ProjectRead, AgentRead, BrokerRead, HubRead, SecretRead, TokenManage:
		if role == RoleMember || role == RoleViewer {
			return nil
		}
		return deny("your account has no Hub role; ask a hub admin for one")
	}
	if role != RoleMember {
		return deny("the %s role is read-only; %s needs the member or admin role", roleName(role), a)
	}
	me := "user:" + userID
	switch a {
	case ProjectCreate, BrokerRegister, BrokerDispatch:
		return nil
	case AgentCreate:
		return nil
	case ProjectUpdate, ProjectDelete, SecretWrite:
		if r.Project == nil {
			return deny("%s on hub-wide resources needs the hub admin role", a)
		}
		if r.Project.Owner == userID {
			return nil
		}
		return deny("%s on project %s needs its owner or a hub admin", ProjectUpdate, r.Project.ID)
	case AgentLifecycle:
		ag := r.Agent
		switch {
		case ag == nil:
			return deny("no agent")
		case ag.Delegator == me || ag.CreatedBy == me || ag.Delegator == userID || ag.CreatedBy == userID:
			return nil
		case r.Project != nil && r.Project.Owner == userID:
			return nil
		case ag.ID == "" && r.Project == nil:
			// Every agent (listing every Job): no one agent to name.
			return deny("%s on every agent needs the hub admin role", a)
		}
		return deny("%s on agent %s needs you to be its delegator, its project's owner or a hub admin", a, ag.ID)
	case BrokerManage, BrokerDeregister:
		if r.Broker != nil && r.Broker.Owner == userID {
			return nil
		}
		return deny("changing a runtime broker needs its owner (who registered it) or a hub admin")
	}
	return deny("%s needs the hub admin role", a)
}

func roleName(role string) string {
	if role == "" {
		return "(none)"
	}
	return role
}
