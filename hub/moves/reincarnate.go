package moves

import (
	"context"
	"errors"
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

// handleReincarnate is POST /agents/{agent}/reincarnate: with a broker, a
// move of the agent there (multi-broker spec, "Moving an Agent to Another
// Runtime Broker"). It loads what the checks judge, runs plan.MoveChecks
// and answers the plan: a dry run's answer, or the refusal of its first
// failing check with the plan in details.plan. Nothing is written either
// way. Executing a move (the saga) and a reincarnation in place are not
// there yet: an eligible request without dryRun answers 501.
func (s *Service) handleReincarnate(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	var req api.ReincarnateRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if err := req.Validate(); err != nil {
		return 0, nil, err
	}
	a, err := s.hub.LoadAgent(ctx, c, r, authz.AgentRead)
	if err != nil {
		return 0, nil, err
	}
	p, err := s.store.GetProject(ctx, a.ProjectID)
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeProjectNotFound, "project of agent "+api.Quote(a.Slug))
	}
	// The agent itself (however the path names it) needs no permission to
	// move unless it patches itself; anyone else needs agent.lifecycle.
	self := c.Kind == authz.Agent && c.ID == a.ID
	if !self || req.Image != "" || req.Role != "" {
		res := authz.Resource{Project: plan.ProjectRes(p), Agent: plan.AgentRes(a)}
		if err := httpapi.Authorize(ctx, s.log, c, authz.AgentLifecycle, res, httpapi.AgentNotFound(r.PathValue("agent"))); err != nil {
			return 0, nil, err
		}
	}
	// Whoever is not the agent must be able to delegate its role (the
	// patched one when --role changes it), before any move check.
	role := a.Role
	if req.Role != "" {
		if !authz.ValidAgentRole(req.Role) {
			return 0, nil, api.BadRequest("role %s is not an agent role", api.Quote(req.Role))
		}
		role = req.Role
	}
	if !self || req.Role != "" {
		if ref := authz.CanDelegate(*c, role); ref != nil {
			return 0, nil, httpapi.Refusal(s.log, c, authz.AgentLifecycle, ref, nil)
		}
	}
	if req.Broker == "" {
		return 0, nil, api.Errorf(api.CodeUnsupportedOperation, "reincarnating an agent in place is not available on this Hub yet: only a move's dry run (broker and dryRun)")
	}
	in, err := s.loadMove(ctx, c, a, p, &req, self)
	if err != nil {
		return 0, nil, err
	}
	v := plan.MoveChecks(in)
	if v.Err != nil {
		return 0, nil, v.Err
	}
	if req.DryRun {
		return http.StatusOK, v.Plan, nil
	}
	if v.Plan.TransferMode == api.TransferRecreate {
		return 0, nil, api.Errorf(api.CodeMoveRecreateNotEnabled,
			"moving agent %s by recreating its workspace is not enabled yet; --dry-run --force previews it", api.Quote(a.Slug)).WithDetail("plan", v.Plan)
	}
	return 0, nil, api.Errorf(api.CodeUnsupportedOperation,
		"this Hub checks moves but does not run them yet: only --dry-run is available").WithDetail("plan", v.Plan)
}

// loadMove reads what plan.MoveChecks judges: the agent as the patch flags
// leave it, its project, both brokers with their storage, liveness and
// the target's capacity, and the caller's access answer. A target the
// caller cannot see is 404 here, before any check can tell it anything.
func (s *Service) loadMove(ctx context.Context, c *authz.Caller, a *store.Agent, p *store.Project, req *api.ReincarnateRequest, self bool) (plan.MoveInput, error) {
	notFound := api.NotFound(api.CodeBrokerNotFound, "runtime broker %s not found", api.Quote(req.Broker))
	dst, serves, err := s.store.GetBrokerForProject(ctx, req.Broker, p.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			httpapi.MarkChecked(ctx)
			return plan.MoveInput{}, notFound
		}
		return plan.MoveInput{}, err
	}
	src, err := s.store.GetBroker(ctx, a.BrokerID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return plan.MoveInput{}, api.Conflict(api.CodeBrokerMissing, "agent %s's runtime broker is no longer registered", api.Quote(a.Slug))
		}
		return plan.MoveInput{}, err
	}
	ai := s.moveAccessInput(c, a, p, dst, serves, self)
	if !plan.MoveTargetVisible(ai) {
		httpapi.MarkChecked(ctx)
		return plan.MoveInput{}, notFound
	}
	httpapi.MarkChecked(ctx) // the access check below decides the rest
	reserved, err := s.store.CountReservations(ctx, dst.ID)
	if err != nil {
		return plan.MoveInput{}, err
	}
	limit, err := s.hub.BrokerLimit(ctx, dst)
	if err != nil {
		return plan.MoveInput{}, err
	}
	patched := *a
	if req.Image != "" {
		patched.Image = req.Image
	}
	if req.Role != "" {
		patched.Role = req.Role
	}
	return plan.MoveInput{
		Agent: &patched, Project: p, Placement: a.WorkspacePlacement,
		Source:       s.moveBroker(src, 0, 0),
		Target:       s.moveBroker(dst, reserved, limit),
		TargetServes: serves,
		Access:       plan.MoveAccess(ai),
		Force:        req.Force,
	}, nil
}

// moveBroker is b as the checks see it: its record, whether its channel is
// up, and the storage its last hello reported.
func (s *Service) moveBroker(b *store.Broker, reserved, limit int) plan.MoveBroker {
	return plan.MoveBroker{Broker: b, Online: s.hub.BrokerOnline(b.ID), Storage: b.WorkspaceStorage, Reserved: reserved, Limit: limit}
}

// moveAccessInput gathers the caller's rights that the spec's move table
// judges (plan.MoveAccess).
func (s *Service) moveAccessInput(c *authz.Caller, a *store.Agent, p *store.Project, dst *store.Broker, serves, self bool) plan.MoveAccessInput {
	res := authz.Resource{Broker: &authz.BrokerRes{ID: dst.ID, Owner: dst.CreatedBy, AutoProvide: dst.AutoProvide, ServesProject: serves}}
	in := plan.MoveAccessInput{
		Agent: a, Target: dst, TargetServes: serves,
		CanReadBroker:      authz.Can(*c, authz.BrokerRead, res) == nil,
		CanDispatch:        authz.Can(*c, authz.BrokerDispatch, res) == nil,
		CanUpdateProject:   authz.CanLink(*c, *plan.ProjectRes(p)) == nil,
		CanCreateAgents:    c.HasScope(authz.ScopeAgentCreate),
		PassthroughAllowed: a.Passthrough == "" || authz.PassthroughAllowed(a.Passthrough, dst.Capabilities) == nil,
	}
	switch {
	case c.Kind == authz.User:
		in.Caller = plan.MoveByUser
	case c.Kind == authz.Token:
		in.Caller = plan.MoveByUserToken
	case self:
		in.Caller = plan.MoveBySelf
	default:
		in.Caller = plan.MoveByAgent
	}
	return in
}
