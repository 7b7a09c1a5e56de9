// The identity of a new agent (role, scopes, delegation, passthrough:
// decided by planIdentity) and the role change of an agent.

package hub

import (
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/store"
)

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
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Role == nil {
		return http.StatusOK, s.agentView(ctx, a, nil), nil
	}
	if *req.Role == "" || !authz.ValidAgentRole(*req.Role) {
		return 0, nil, api.BadRequest("invalid role %q: use worker or coordinator", *req.Role)
	}
	if err := httpapi.Refusal(s.log, c, authz.AgentLifecycle, authz.CanDelegate(*c, a.Role), nil); err != nil {
		return 0, nil, err
	}
	if err := httpapi.Refusal(s.log, c, authz.AgentLifecycle, authz.CanDelegate(*c, *req.Role), nil); err != nil {
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
