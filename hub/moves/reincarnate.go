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
// way. An eligible move without dryRun is accepted (202) and runs in the
// background (saga.go). Without a broker it is a reincarnation in place
// (inplace.go).
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
		return s.reincarnateInPlace(ctx, c, a, p, &req, self)
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
	return s.accept(ctx, c, a, p, in, &req, v.Plan, self)
}

// accept starts an eligible move: the values of the secrets the agent
// names are handed to the target, so c must be allowed to name them now
// (decided here, before anything is written); then the move's record, and
// the saga in the background. 202 with the record and the plan.
func (s *Service) accept(ctx context.Context, c *authz.Caller, a *store.Agent, p *store.Project, in plan.MoveInput, req *api.ReincarnateRequest, pl api.MovePlan, self bool) (int, any, error) {
	secrets, err := s.hub.AgentSecrets(ctx, c, p, a)
	if err != nil {
		return 0, nil, err
	}
	pt := patch{Image: req.Image, Role: req.Role}
	// The mover becomes the recorded delegator when it changes the role,
	// and a user does when the agent's delegation has no provenance.
	if !self && (req.Role != "" || (c.Kind == authz.User && a.Delegator == "" && len(a.DelegationChain) == 0)) {
		pt.Delegator = c.Principal()
	}
	m := &store.Move{AgentID: a.ID, SourceBrokerID: in.Source.Broker.ID, TargetBrokerID: in.Target.Broker.ID,
		Step: api.MoveStepAccepted, Handoff: req.Handoff, CreatedBy: c.Principal()}
	sys := s.hub.SystemContext()
	if err := s.store.CreateMove(sys, m); err != nil {
		if errors.Is(err, store.ErrAlreadyExists) {
			return 0, nil, api.Conflict(api.CodeConflict, "agent %s is being moved already; wait for that move to end", api.Quote(a.Slug))
		}
		return 0, nil, storeerr.Map(err, api.CodeAgentNotFound, "agent "+api.Quote(a.Slug))
	}
	s.log.Info("move accepted", "move", m.ID, "agent_id", a.ID, "source_broker_id", m.SourceBrokerID, "target_broker_id", m.TargetBrokerID, "by", c.Principal())
	view := moveView(m) // before the saga writes its record
	g := &saga{s: s, m: m, project: p, secrets: secrets, patch: pt, source: in.Source.Broker, target: in.Target.Broker}
	s.hub.Go(func() { g.run(sys) })
	return http.StatusAccepted, api.MoveAccepted{Move: view, Plan: pl}, nil
}

// moveView is a move's record as the API shows it.
func moveView(m *store.Move) api.AgentMove {
	return api.AgentMove{ID: m.ID, Agent: m.AgentID, Source: m.SourceBrokerID, Target: m.TargetBrokerID, Step: m.Step,
		Outcome: m.Outcome, SourceCleanup: m.SourceCleanup, Message: m.Message, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
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
	ai := s.moveAccessInput(c, a, p, dst, serves, self)
	if !plan.MoveTargetVisible(ai) {
		httpapi.MarkChecked(ctx)
		return plan.MoveInput{}, notFound
	}
	httpapi.MarkChecked(ctx) // the access check below decides the rest
	in, err := s.loadChecks(ctx, a, p, dst.ID, patch{Image: req.Image, Role: req.Role})
	if err != nil {
		return plan.MoveInput{}, err
	}
	in.Access, in.Force = plan.MoveAccess(ai), req.Force
	return in, nil
}

// loadChecks reads the checks' input but the caller's access (allowed)
// and force (off): the agent as pt leaves it, its project, its broker and
// the target (by name or ID) with their storage, liveness and the
// target's capacity. The saga runs it again before the stop.
func (s *Service) loadChecks(ctx context.Context, a *store.Agent, p *store.Project, target string, pt patch) (plan.MoveInput, error) {
	dst, serves, err := s.store.GetBrokerForProject(ctx, target, p.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return plan.MoveInput{}, api.NotFound(api.CodeBrokerNotFound, "runtime broker %s not found", api.Quote(target))
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
	reserved, err := s.store.CountReservations(ctx, dst.ID)
	if err != nil {
		return plan.MoveInput{}, err
	}
	limit, err := s.hub.BrokerLimit(ctx, dst)
	if err != nil {
		return plan.MoveInput{}, err
	}
	patched := *a
	if pt.Image != "" {
		patched.Image = pt.Image
	}
	if pt.Role != "" {
		patched.Role = pt.Role
	}
	return plan.MoveInput{
		Agent: &patched, Project: p, Placement: a.WorkspacePlacement,
		Source:       s.moveBroker(src, 0, 0),
		Target:       s.moveBroker(dst, reserved, limit),
		TargetServes: serves,
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

// handleListMoves is GET /agents/{agent}/moves: the agent's moves, newest
// first, for whoever may read the agent (its records are the system's:
// read as the system once the agent is authorized).
func (s *Service) handleListMoves(r *http.Request, c *authz.Caller) (int, any, error) {
	a, err := s.hub.LoadAgent(r.Context(), c, r, authz.AgentRead)
	if err != nil {
		return 0, nil, err
	}
	ms, err := s.store.ListMoves(s.hub.SystemContext(), a.ID)
	if err != nil {
		return 0, nil, err
	}
	out := api.AgentMoves{Moves: make([]api.AgentMove, 0, len(ms))}
	for _, m := range ms {
		out.Moves = append(out.Moves, moveView(m))
	}
	return http.StatusOK, out, nil
}
