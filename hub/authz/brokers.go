package authz

// Visible reports whether c may know that broker b exists. A broker the
// caller cannot see is answered exactly like an unknown one (404
// runtime_broker_not_found). Visible: AutoProvide on, or it serves the
// project at hand, or the caller has broker.read.
func Visible(c Caller, b BrokerRes) bool {
	if c.Kind == Broker {
		return b.ID == c.ID
	}
	return b.AutoProvide || b.ServesProject || Can(c, BrokerRead, Resource{Broker: &b}) == nil
}

// Dispatchable decides whether c may send an agent to broker b, which the
// caller can already see. A user needs broker.dispatch unless AutoProvide
// is on; a token reaches only AutoProvide brokers; an agent reaches only
// brokers that serve its project, and, without the project:agent:create
// scope, only those with AutoProvide on as well.
func Dispatchable(c Caller, b BrokerRes) *Refusal {
	switch c.Kind {
	case User:
		if b.AutoProvide {
			return nil
		}
		return Can(c, BrokerDispatch, Resource{Broker: &b})
	case Token:
		if b.AutoProvide {
			return nil
		}
		return deny("a user access token can only use runtime brokers with AutoProvide on; sign in (`scion hub auth login`) to use this one")
	case Agent:
		if !b.ServesProject {
			return deny("an agent can only use runtime brokers that already serve its project")
		}
		if b.AutoProvide || c.HasScope(ScopeAgentCreate) {
			return nil
		}
		return deny("this agent can only use runtime brokers with AutoProvide on (it lacks the %s scope)", ScopeAgentCreate)
	}
	return deny("%s callers cannot dispatch agents", c.Kind)
}

// CanLink decides whether c may link broker b to the project as a
// provider (an explicit --broker that does not serve the project yet, or
// `runtime-broker provide`): that is a project update. Agents never link.
func CanLink(c Caller, p Project) *Refusal {
	return Can(c, ProjectUpdate, Resource{Project: &p})
}
