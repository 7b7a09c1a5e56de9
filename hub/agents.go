package hub

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

const defaultProject = "default"

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

func validateCreate(req *api.CreateAgentRequest) error {
	if err := validName("agent", req.Name); err != nil {
		return err
	}
	if req.Harness == "" {
		req.Harness = "generic"
	}
	if len(req.Image) > 512 {
		return api.BadRequest("image reference too long")
	}
	switch req.Harness {
	case "generic", "claude", "gemini":
	default:
		return api.BadRequest("unknown harness %q: use generic, claude or gemini", req.Harness)
	}
	if len(req.Command) > 256 || len(req.Env) > 256 {
		return api.BadRequest("command and env are limited to 256 entries each")
	}
	for k := range req.Env {
		if !envKeyRE.MatchString(k) {
			return api.BadRequest("invalid environment variable name %q", k)
		}
	}
	return api.ValidatePorts(req.Ports)
}

func (s *Server) agentView(ctx context.Context, a *store.Agent, names map[string]string) api.Agent {
	v := api.Agent{ID: a.ID, Slug: a.Slug, ProjectID: a.ProjectID, BrokerID: a.BrokerID, Profile: a.Profile,
		Harness: a.Harness, Image: a.Image, Command: a.Command, Env: redactEnv(a.Env), Ports: a.PortMappings, Phase: a.Phase,
		StatusMessage: a.StatusMessage, ContainerStatus: a.ContainerStatus, RunID: a.RunID,
		Generation: a.Generation, Generations: a.Generations, Role: a.Role, CreatedBy: a.CreatedBy,
		Delegator: a.Delegator, ParentAgentID: a.ParentAgentID, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	if a.BrokerID != "" {
		name, ok := names[a.BrokerID]
		if !ok {
			if b, err := s.store.GetBroker(ctx, a.BrokerID); err == nil {
				name = b.Name
			}
			if names != nil {
				names[a.BrokerID] = name
			}
		}
		v.BrokerName = name
	}
	return v
}

func (s *Server) handleCreateAgent(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	var req api.CreateAgentRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	key, err := createKeyOf(r, c, &req)
	if err != nil {
		return 0, nil, err
	}
	if key != nil {
		if status, body, ok, err := s.replayCreate(ctx, key); ok || err != nil {
			return status, body, err
		}
	}
	var claimed bool
	status, body, err := s.createAgent(r, c, req, key, &claimed)
	switch {
	case claimed:
		s.recordCreate(ctx, key, status, body, err)
	case errKeyInUse(err):
		// A concurrent create with this key won the claim: answer as it
		// does.
		status, body, _, err = s.replayCreate(ctx, key)
	}
	return status, body, err
}

// createAgent is POST /agents after the Idempotency-Key check. With a key
// the agent is created together with the key's record, and *claimed says
// so: only then is there an answer to record (a create refused earlier
// created nothing).
func (s *Server) createAgent(r *http.Request, c *Caller, req api.CreateAgentRequest, key *createKey, claimed *bool) (int, any, error) {
	ctx := r.Context()
	settings, err := s.hubSettings(ctx)
	if err != nil {
		return 0, nil, err
	}
	// Agent Defaults fill what the request leaves out.
	req.Harness = cmp.Or(req.Harness, settings.AgentDefaults.DefaultHarness)
	req.Image = cmp.Or(req.Image, settings.AgentDefaults.DefaultImage)
	if err := validateCreate(&req); err != nil {
		return 0, nil, err
	}
	if err := requireWriter(c); err != nil {
		return 0, nil, err
	}
	projRef := cmp.Or(req.Project, c.ProjectID, defaultProject)
	p, err := s.loadProject(ctx, c, projRef)
	if err != nil {
		return 0, nil, err
	}
	in, brokers, err := s.placementInput(ctx, c, p, req.Broker)
	if err != nil {
		return 0, nil, err
	}
	d, perr := placement.Select(in)
	if perr != nil {
		return 0, nil, perr
	}
	b := brokers[d.BrokerID]
	if d.AutoLink {
		if err := s.store.LinkProvider(ctx, p.ID, b.ID); err != nil {
			return 0, nil, err
		}
	}
	profile := resolveProfile(req.Profile, p, b)
	if err := checkProfile(b, profile); err != nil {
		return 0, nil, err
	}
	limit, err := s.brokerLimit(ctx, b)
	if err != nil {
		return 0, nil, err
	}
	now := time.Now().UTC()
	a := &store.Agent{ID: mustV7(), Slug: req.Name, ProjectID: p.ID, BrokerID: b.ID,
		Profile: profile, Harness: req.Harness, Image: req.Image, Command: req.Command,
		Env: req.Env, Ports: req.Ports, Phase: api.PhaseProvisioning, RunID: mustV7(), Generation: 1, Role: req.Role,
		CreatedBy: c.Kind + ":" + c.ID, Delegator: c.Kind + ":" + c.ID, Payload: req.Payload, CreatedAt: now, UpdatedAt: now}
	if c.Kind == CallerAgent {
		a.ParentAgentID = c.ID
	}
	a.Generations = []api.Generation{{Number: 1, BrokerID: b.ID, RunID: a.RunID, StartedAt: now, Reason: "created"}}
	var reserve *int
	if req.Start {
		reserve = &limit // only running agents hold a slot
	} else if limit > 0 {
		n, err := s.store.CountReservations(ctx, b.ID)
		if err == nil && n >= limit {
			err = quotaError(b, limit)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if key != nil {
		err = s.store.CreateAgentKeyed(ctx, a, reserve, key.record(now))
		*claimed = err == nil
	} else {
		err = s.store.CreateAgent(ctx, a, reserve)
	}
	if err != nil {
		switch {
		case errors.Is(err, store.ErrQuota):
			err = quotaError(b, limit)
		case isExists(err):
			err = api.Conflict(api.CodeAlreadyExists, "an agent named %q already exists in project %q", req.Name, p.Name)
		}
		return 0, nil, err
	}
	s.metrics.created.Inc()
	spec := wire.AgentSpec{AgentID: a.ID, Slug: a.Slug, ProjectID: p.ID, ProjectName: p.Name, RunID: a.RunID,
		Generation: a.Generation, Harness: a.Harness, Image: a.Image, Command: a.Command, Env: a.Env,
		Ports: a.Ports, Profile: a.Profile, SharingMode: p.SharingMode, GitRemote: p.GitRemote,
		AgentToken: s.mintAgentToken(a.ID, p.ID), HubURL: s.opts.PublicURL, Start: req.Start, Payload: req.Payload}
	var st wire.AgentStatus
	s.inflight.add(a.ID)
	derr := s.dispatch(ctx, b.ID, wire.MethodAgentCreate, spec, &st, "create:"+a.RunID)
	a, err = s.afterDispatch(context.WithoutCancel(ctx), a.ID, st, derr, req.Start)
	s.inflight.done(spec.AgentID)
	if err == nil {
		err = derr
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, s.agentView(ctx, a, map[string]string{b.ID: b.Name}), nil
}

// loadAgent resolves {agent}: an ID, or a slug in ?project= (default: the
// caller's project, else "default").
func (s *Server) loadAgent(ctx context.Context, c *Caller, r *http.Request) (*store.Agent, error) {
	ref := r.PathValue("agent")
	var a *store.Agent
	var err error
	if _, perr := uuid.Parse(ref); perr == nil {
		a, err = s.store.GetAgent(ctx, ref)
	} else {
		projRef := cmp.Or(r.URL.Query().Get("project"), c.ProjectID, defaultProject)
		var p *store.Project
		if p, err = s.loadProject(ctx, c, projRef); err != nil {
			return nil, api.NotFound(api.CodeAgentNotFound, "agent %q not found", ref)
		}
		a, err = s.store.GetAgentBySlug(ctx, p.ID, ref)
	}
	if isNotFound(err) || (err == nil && !canSeeProject(c, a.ProjectID)) {
		return nil, api.NotFound(api.CodeAgentNotFound, "agent %q not found", ref)
	}
	return a, err
}

func (s *Server) handleGetAgent(r *http.Request, c *Caller) (int, any, error) {
	a, err := s.loadAgent(r.Context(), c, r)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.agentView(r.Context(), a, nil), nil
}

func (s *Server) handleListAgents(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	page, err := pageFrom(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	f := store.AgentFilter{ProjectID: c.ProjectID, Phase: q.Get("phase")}
	if ref := q.Get("project"); ref != "" {
		p, err := s.loadProject(ctx, c, ref)
		if err != nil {
			return 0, nil, err
		}
		f.ProjectID = p.ID
	}
	if ref := q.Get("broker"); ref != "" {
		b, err := s.loadBroker(ctx, ref)
		if err != nil {
			return 0, nil, err
		}
		f.BrokerID = b.ID
	}
	items, next, total, err := s.store.ListAgents(ctx, f, page)
	if err != nil {
		return 0, nil, err
	}
	names := map[string]string{}
	out := api.List[api.Agent]{Items: make([]api.Agent, 0, len(items)), NextCursor: next, Total: total}
	for _, a := range items {
		out.Items = append(out.Items, s.agentView(ctx, a, names))
	}
	return http.StatusOK, out, nil
}
