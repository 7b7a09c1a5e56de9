package authz

// tokenCan: a user access token reaches one project, only through its
// scopes, and never beyond what its owner could do. It cannot carry broker
// read or dispatch, create projects, mint tokens, or change the Hub.
func tokenCan(c Caller, a Action, r Resource) *Refusal {
	switch a {
	case BrokerRead, BrokerDispatch:
		return deny("a user access token cannot carry %s; sign in (`scion hub auth login`) to reach this broker", a)
	case ProjectCreate, BrokerRegister, BrokerManage, BrokerDeregister, JoinTokenCreate, HubRead, HubAdmin, TokenManage:
		return deny("a user access token cannot do %s; sign in (`scion hub auth login`)", a)
	}
	p := projectOf(r)
	if p == "" {
		return deny("a user access token reaches only its project")
	}
	if p != c.ProjectID {
		return hidden("outside the token's project")
	}
	var need []string
	switch a {
	case ProjectRead, SecretRead:
		if len(c.Scopes) == 0 {
			return deny("this token has no scopes")
		}
	case ProjectUpdate, SecretWrite:
		need = []string{ScopeProjectUpdate}
	case AgentRead:
		need = []string{ScopeAgentRead, ScopeAgentCreate, ScopeAgentLifecycle}
	case AgentCreate:
		need = []string{ScopeAgentCreate}
	case AgentLifecycle:
		need = []string{ScopeAgentLifecycle}
	default:
		return deny("a user access token cannot do %s", a)
	}
	if len(need) > 0 && !anyScope(c, need) {
		return deny("%s needs a token with the %s scope", a, need[0])
	}
	return userCan(c.UserID, c.Role, a, r)
}

func anyScope(c Caller, scopes []string) bool {
	for _, s := range scopes {
		if c.HasScope(s) {
			return true
		}
	}
	return false
}
