// The identity of a new agent (role, scopes, delegation, passthrough) and
// the permission checks of placing and re-running agents.

package hub

import (
	"context"
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/store"
)

// agentIdentity is who a new agent is and who answers for it.
type agentIdentity struct {
	role       string
	scopes     []string
	delegation authz.Delegation
	parent     string // the creating agent's ID
	// holder is the creating agent's record: the secrets it was given
	// are the only ones it may hand on (see heldBy).
	holder *store.Agent
}

// newAgentIdentity decides the identity of the agent c asks to create:
// the role must be one c can delegate, the scopes ones c holds, and a
// passthrough identity only a signed-in user can lend.
func (s *Server) newAgentIdentity(ctx context.Context, c *Caller, req *api.CreateAgentRequest) (agentIdentity, error) {
	markChecked(ctx)
	if !authz.ValidAgentRole(req.Role) {
		return agentIdentity{}, api.BadRequest("invalid role %q: use worker or coordinator", req.Role)
	}
	id := agentIdentity{role: req.Role}
	if id.role == "" {
		id.role = authz.AgentRoleWorker
	}
	if err := s.refusal(c, authz.AgentCreate, authz.CanDelegate(*c, id.role), nil); err != nil {
		return id, err
	}
	var requested []string
	if req.Scopes != nil {
		requested = append([]string{}, *req.Scopes...)
	}
	scopes, ref := authz.AgentScopes(*c, requested)
	if err := s.refusal(c, authz.AgentCreate, ref, nil); err != nil {
		return id, err
	}
	id.scopes = scopes
	if req.Passthrough != "" {
		if req.Passthrough != "gcp" {
			return id, api.BadRequest("invalid passthrough %q: the passthrough identity kinds are: gcp", req.Passthrough)
		}
		if err := s.refusal(c, authz.AgentCreate, authz.CanUsePassthrough(*c), nil); err != nil {
			return id, err
		}
	}
	var parentDelegator string
	var parentChain []string
	if c.Kind == CallerAgent {
		parent, err := s.store.GetAgent(ctx, c.ID)
		if err != nil {
			return id, err
		}
		parentDelegator, parentChain, id.parent = parent.Delegator, parent.DelegationChain, parent.ID
		id.holder = parent
	}
	id.delegation = authz.NewDelegation(*c, parentDelegator, parentChain)
	return id, nil
}

// checkPlacement refuses a decided broker the caller may not dispatch to,
// or one that does not allow the agent's passthrough identity.
func (s *Server) checkPlacement(c *Caller, in placement.Input, d placement.Decision, b *store.Broker, passthrough string) error {
	for _, pb := range in.Brokers {
		if pb.ID == d.BrokerID && !pb.Dispatchable {
			res := authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide, ServesProject: pb.Provider}
			return s.refusal(c, authz.BrokerDispatch, authz.Dispatchable(*c, res), nil)
		}
	}
	return s.refusal(c, authz.BrokerDispatch, authz.PassthroughAllowed(passthrough, b.Capabilities), nil)
}

// checkRerun is the authority check for start, restart and resume: acting
// on another agent runs it again under its role, so the caller must be
// able to delegate that role. A user re-running an agent with no recorded
// provenance becomes its delegator. (Whether the broker still takes the
// agent's passthrough identity is checked once the broker is loaded.)
func (s *Server) checkRerun(ctx context.Context, c *Caller, a *store.Agent) error {
	if !(c.Kind == CallerAgent && c.ID == a.ID) {
		if err := s.refusal(c, authz.AgentLifecycle, authz.CanDelegate(*c, a.Role), nil); err != nil {
			return err
		}
	}
	if d := authz.Redelegate(*c, a.Delegator, false); d != a.Delegator {
		if _, err := s.mutateAgent(ctx, a.ID, func(x *store.Agent) error { x.Delegator = d; return nil }); err != nil {
			return err
		}
		a.Delegator = d
	}
	return nil
}

// handleUpdateAgent is PATCH /agents/{agent}: today, a role change. The
// caller needs agent.lifecycle on the agent, must be able to delegate both
// its current and its new role, and becomes its recorded delegator.
func (s *Server) handleUpdateAgent(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	a, err := s.loadAgent(ctx, c, r, authz.AgentLifecycle)
	if err != nil {
		return 0, nil, err
	}
	var req api.UpdateAgentRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Role == nil {
		return http.StatusOK, s.agentView(ctx, a, nil), nil
	}
	if *req.Role == "" || !authz.ValidAgentRole(*req.Role) {
		return 0, nil, api.BadRequest("invalid role %q: use worker or coordinator", *req.Role)
	}
	if err := s.refusal(c, authz.AgentLifecycle, authz.CanDelegate(*c, a.Role), nil); err != nil {
		return 0, nil, err
	}
	if err := s.refusal(c, authz.AgentLifecycle, authz.CanDelegate(*c, *req.Role), nil); err != nil {
		return 0, nil, err
	}
	a, err = s.mutateAgent(ctx, a.ID, func(x *store.Agent) error {
		x.Role = *req.Role
		x.Delegator = authz.Redelegate(*c, x.Delegator, true)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	s.log.Info("agent role changed", "agent", a.ID, "role", a.Role, "delegator", a.Delegator)
	return http.StatusOK, s.agentView(ctx, a, nil), nil
}
