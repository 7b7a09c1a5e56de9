package hub

import (
	"cmp"
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

func (s *Server) agentView(ctx context.Context, a *store.Agent, names map[string]string) api.Agent {
	v := api.Agent{ID: a.ID, Slug: a.Slug, ProjectID: a.ProjectID, BrokerID: a.BrokerID, Profile: a.Profile,
		Harness: a.Harness, Image: a.Image, Command: a.Command, Env: api.RedactEnv(a.Env), Ports: a.PortMappings, Phase: a.Phase,
		StatusMessage: a.StatusMessage, ContainerStatus: a.ContainerStatus, RunID: a.RunID,
		Generation: a.Generation, Generations: a.Generations, Role: a.Role, CreatedBy: a.CreatedBy,
		Delegator: a.Delegator, DelegationChain: a.DelegationChain, Scopes: a.Scopes, Passthrough: a.Passthrough,
		Secrets: a.SecretNames, ParentAgentID: a.ParentAgentID, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		PinnedRuntimeTarget: clonePin(a.Pin)}
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
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	// Authorized before anything else, a replay included: a caller that
	// lost the right to create here gets no recorded answer either.
	projRef := cmp.Or(req.Project, c.ProjectID, api.GlobalProject)
	p, err := s.loadProject(ctx, c, projRef, authz.AgentCreate)
	if err != nil {
		return 0, nil, err
	}
	key, err := createKeyOf(r, c, &req)
	if err != nil {
		return 0, nil, err
	}
	if key == nil {
		var claimed bool
		return s.createAgent(r, c, p, req, nil, &claimed)
	}
	// One request per key at a time in this Hub: a retry that arrives
	// while the first is running waits for it, then answers as below.
	release, err := s.keyed.acquire(ctx, key)
	if err != nil {
		return 0, nil, err
	}
	defer release()
	resolve := func(rec *store.IdempotencyRecord) (int, any, error) {
		return s.resolveCreate(ctx, c, key, rec, p, req)
	}
	if status, body, ok, err := s.replayCreate(ctx, key, resolve); ok || err != nil {
		return status, body, err
	}
	var claimed bool
	status, body, err := s.createAgent(r, c, p, req, key, &claimed)
	switch {
	case claimed:
		s.recordCreate(ctx, key, status, body, err)
	case errKeyInUse(err):
		// Another Hub's create with this key won the claim: answer as it
		// does, or as the broker says it did.
		status, body, _, err = s.replayCreate(ctx, key, resolve)
	}
	return status, body, err
}

// createAgent is POST /agents after the Idempotency-Key check: load,
// plan.Create, one transaction, the broker's create (hub/plan/plan_create.go). With
// a key the agent is created together with the key's record, and
// *claimed says so: only then is there an answer to record (a create
// refused earlier created nothing).
func (s *Server) createAgent(r *http.Request, c *Caller, p *store.Project, req api.CreateAgentRequest, key *createKey, claimed *bool) (int, any, error) {
	ctx := r.Context()
	began := time.Now()
	in, secrets, err := s.loadCreate(ctx, c, p, req, key)
	if err != nil {
		return 0, nil, err
	}
	cp, err := plan.Create(in)
	if err != nil {
		return 0, nil, s.answer(c, err)
	}
	b := cp.Broker
	if cp.CheckRoom {
		n, err := s.store.CountReservations(ctx, b.ID)
		if err == nil {
			err = cp.Room(n)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	a := cp.Agent
	linked, err := s.insertAgent(ctx, c, p, a, cp.Opts)
	*claimed = err == nil && key != nil
	if err != nil {
		return 0, nil, cp.InsertErr(err)
	}
	if linked {
		s.log.Info("runtime broker linked to the project by placement", "broker", b.Name, "project", p.Name, "by", c.Principal())
	}
	s.metrics.created.Inc()
	spec := s.createSpec(a, p, secrets, in.Req.Kubernetes, in.Req.Start)
	a, _, err = s.runCreate(ctx, a, b, spec, cp.Key)
	s.metrics.createTime.WithLabelValues(createLabel(err)).Observe(time.Since(began).Seconds())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, s.agentView(ctx, a, map[string]string{b.ID: b.Name}), nil
}

// loadCreate reads what plan.Create decides on, after plan.CreateRequest: the
// Hub's settings and limits (cached), the creating agent's record, the
// secrets the request names (their values for the broker, and their authz
// decision), and the placement candidates.
func (s *Server) loadCreate(ctx context.Context, c *Caller, p *store.Project, req api.CreateAgentRequest, key *createKey) (plan.CreateInput, map[string]string, error) {
	httpapi.MarkChecked(ctx)
	settings, err := s.settings.Hub(ctx)
	if err != nil {
		return plan.CreateInput{}, nil, err
	}
	if req, err = plan.CreateRequest(req, settings); err != nil {
		return plan.CreateInput{}, nil, err
	}
	lim, err := s.settings.Limits(ctx)
	if err != nil {
		return plan.CreateInput{}, nil, err
	}
	now := time.Now().UTC()
	in := plan.CreateInput{Caller: *c, Project: p, Req: req, Settings: settings, Limits: lim, Key: key.record(now),
		AgentID: httpapi.NewID(), RunID: httpapi.NewID(), Now: now}
	if c.Kind == CallerAgent {
		in.Parent, in.ParentErr = s.store.GetAgent(ctx, c.ID)
	}
	var secrets map[string]string
	if in.ParentErr == nil {
		secrets, in.SecretsErr = s.agentSecrets(ctx, c, p, req.Secrets, in.Parent)
	}
	if in.Brokers, err = s.loadCandidates(ctx, c, p, req.Broker); err != nil {
		return plan.CreateInput{}, nil, err
	}
	return in, secrets, nil
}

// insertAgent writes c's new agent a in project p with opts. A name held
// by an agent the broker holds nothing of (plan.NoContainer: its create was
// refused) is taken over: that agent is replaced in the same transaction,
// so a refused create never blocks its name and the retry with a fixed
// request succeeds. Replacing is deleting the old record, so it needs
// what a delete of it would (agent.lifecycle); without it the name is
// taken.
func (s *Server) insertAgent(ctx context.Context, c *Caller, p *store.Project, a *store.Agent, opts store.CreateAgentOptions) (bool, error) {
	linked, err := s.store.CreateAgentWith(ctx, a, opts)
	if !isExists(err) {
		return linked, err
	}
	old, gerr := s.store.GetAgentBySlug(ctx, a.ProjectID, a.Slug)
	if gerr != nil || !plan.Replaceable(*c, p, old, s.inflight.has(old.ID)) {
		return false, err
	}
	opts.Replace = old
	linked, rerr := s.store.CreateAgentWith(ctx, a, opts)
	if isConflict(rerr) { // it changed meanwhile: the name is taken
		return false, err
	}
	if rerr == nil {
		s.observed.forget(old.ID)
		s.log.Info("agent replaces one whose create failed", "agent_id", a.ID, "replaced", old.ID, "slug", a.Slug)
	}
	return linked, rerr
}

// loadAgent resolves {agent}: an ID, or a slug in ?project= (default: the
// caller's project, else "default"), and checks that c may do act on it.
// An agent the caller cannot see is answered like an unknown one.
func (s *Server) loadAgent(ctx context.Context, c *Caller, r *http.Request, act authz.Action) (*store.Agent, error) {
	ref := r.PathValue("agent")
	var a *store.Agent
	var p *store.Project
	var err error
	if _, perr := uuid.Parse(ref); perr == nil {
		if a, err = s.store.GetAgent(ctx, ref); err == nil {
			p, err = s.store.GetProject(ctx, a.ProjectID)
		}
	} else {
		projRef := cmp.Or(r.URL.Query().Get("project"), c.ProjectID, api.GlobalProject)
		if p, err = s.loadProject(ctx, c, projRef, authz.ProjectRead); err != nil {
			if api.IsCode(err, api.CodeProjectNotFound) { // unknown or hidden
				err = httpapi.AgentNotFound(ref)()
			}
			return nil, err
		}
		a, err = s.store.GetAgentBySlug(ctx, p.ID, ref)
	}
	if err != nil {
		if isNotFound(err) {
			httpapi.MarkChecked(ctx)
		}
		return nil, storeerr.Map(err, api.CodeAgentNotFound, "agent "+api.Quote(ref))
	}
	res := authz.Resource{Project: plan.ProjectRes(p), Agent: plan.AgentRes(a)}
	if err := httpapi.Authorize(ctx, s.log, c, authz.AgentRead, res, httpapi.AgentNotFound(ref)); err != nil {
		return nil, err
	}
	if act != authz.AgentRead {
		if err := httpapi.Authorize(ctx, s.log, c, act, res, httpapi.AgentNotFound(ref)); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (s *Server) handleGetAgent(r *http.Request, c *Caller) (int, any, error) {
	a, err := s.loadAgent(r.Context(), c, r, authz.AgentRead)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.agentView(r.Context(), a, nil), nil
}

func (s *Server) handleListAgents(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	page, err := httpapi.PageFrom(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	f := store.AgentFilter{ProjectID: c.ProjectID, Phase: q.Get("phase")}
	switch ref := cmp.Or(q.Get("project"), c.ProjectID); {
	case ref != "":
		p, err := s.loadProject(ctx, c, ref, authz.ProjectRead)
		if err != nil {
			return 0, nil, err
		}
		if err := httpapi.Authorize(ctx, s.log, c, authz.AgentRead, authz.Resource{Project: plan.ProjectRes(p)}, httpapi.ProjectNotFound(ref)); err != nil {
			return 0, nil, err
		}
		f.ProjectID = p.ID
	default: // every project: only callers that read them all
		if err := httpapi.Authorize(ctx, s.log, c, authz.AgentRead, authz.Resource{}, nil); err != nil {
			return 0, nil, err
		}
	}
	if ref := q.Get("broker"); ref != "" {
		b, err := s.loadBroker(ctx, c, ref, authz.BrokerRead)
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
