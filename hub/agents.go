package hub

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
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

// placementInput gathers what the cascade needs about every broker.
func (s *Server) placementInput(ctx context.Context, c *Caller, p *store.Project, explicit string) (placement.Input, map[string]*store.Broker, error) {
	settings, err := s.hubSettings(ctx)
	if err != nil {
		return placement.Input{}, nil, err
	}
	providers, err := s.store.ProjectProviders(ctx, p.ID)
	if err != nil {
		return placement.Input{}, nil, err
	}
	isProvider := make(map[string]bool, len(providers))
	for _, id := range providers {
		isProvider[id] = true
	}
	in := placement.Input{Project: p.Name, Explicit: explicit, ProjectDefault: p.DefaultBrokerID,
		HubDefault:       settings.AgentDefaults.DefaultRuntimeBroker,
		CanUpdateProject: c.Kind == CallerUser && requireWriter(c) == nil}
	byID := map[string]*store.Broker{}
	add := func(b *store.Broker) {
		byID[b.ID] = b
		in.Brokers = append(in.Brokers, placement.Broker{ID: b.ID, Name: b.Name, Online: s.brokerOnline(b.ID),
			Provider: isProvider[b.ID], Dispatchable: true})
	}
	// The cascade decides on one broker when --broker or the project's
	// default names one that exists: load just that one, not the fleet (a
	// Hub with many brokers would otherwise read them all on every create).
	if ref := cmp.Or(explicit, p.DefaultBrokerID); ref != "" {
		b, err := s.store.GetBroker(ctx, ref)
		switch {
		case err == nil:
			add(b)
			return in, byID, nil
		case !isNotFound(err):
			return in, nil, err
		case explicit != "":
			return in, byID, nil // Select answers runtime_broker_not_found
		}
	}
	page := store.Page{Limit: 1000}
	for {
		bs, next, _, err := s.store.ListBrokers(ctx, page)
		if err != nil {
			return in, nil, err
		}
		for _, b := range bs {
			add(b)
		}
		if next == "" {
			return in, byID, nil
		}
		page.Cursor = next
	}
}

// resolveProfile: -p first, then the project's active profile, then the
// selected broker's default profile. The creator's profile is never
// inherited.
func resolveProfile(req string, p *store.Project, b *store.Broker) string {
	if req != "" {
		return req
	}
	if p.ActiveProfile != "" {
		return p.ActiveProfile
	}
	for _, pr := range b.Profiles {
		if pr.Default {
			return pr.Name
		}
	}
	return ""
}

// checkProfile refuses a profile the broker does not offer. A broker that
// declares no profiles takes the name as a plain label.
func checkProfile(b *store.Broker, profile string) error {
	if profile == "" || len(b.Profiles) == 0 {
		return nil
	}
	names := make([]string, 0, len(b.Profiles))
	for _, pr := range b.Profiles {
		if pr.Name == profile {
			return nil
		}
		names = append(names, pr.Name)
	}
	return api.Conflict(api.CodeProfileNotAvailable, "runtime broker %q does not offer profile %q; it offers: %s (choose one with -p, or change the project's active profile)",
		b.Name, profile, strings.Join(names, ", ")).WithDetail("profiles", names)
}

func (s *Server) brokerLimit(ctx context.Context, b *store.Broker) (int, error) {
	lim, err := s.hubLimits(ctx)
	if err != nil {
		return 0, err
	}
	return placement.EffectiveLimit(b.Settings.MaxAgents, lim.MaxAgentsPerBroker), nil
}

func quotaError(b *store.Broker, limit int) error {
	return api.Errorf(http.StatusTooManyRequests, api.CodeQuotaExceeded,
		"runtime broker %q is at its limit of %d running agents; stop an agent there or choose another broker", b.Name, limit).
		WithDetail("broker", b.Name).WithDetail("limit", limit)
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

// afterDispatch records the outcome of a lifecycle command. On failure the
// agent goes to the error phase with a message naming the cause and its
// capacity slot is released (nothing half-done stays accounted).
func (s *Server) afterDispatch(ctx context.Context, agentID string, st wire.AgentStatus, derr error, wantRunning bool) (*store.Agent, error) {
	unlock := s.observed.lock(agentID)
	defer unlock()
	a, err := s.mutateAgent(ctx, agentID, func(a *store.Agent) error {
		if derr != nil {
			a.Phase = api.PhaseError
			a.StatusMessage = api.AsError(derr).Message
			a.PortMappings = nil // until the broker reports a state that holds ports again
			return nil
		}
		if !s.observed.fresh(a.ID, st.ObservedAt) {
			return errStale // a newer report already told the state
		}
		a.StatusMessage = st.Message
		a.ContainerStatus = st.State
		a.PortMappings = st.Ports
		a.Phase = phaseFor(st.State, wantRunning)
		return nil
	})
	switch {
	case errors.Is(err, errStale):
		a, err = s.store.GetAgent(ctx, agentID)
	case err == nil && derr == nil:
		s.observed.applied(agentID, st.ObservedAt)
	}
	if err != nil {
		return nil, err
	}
	if a.Phase != api.PhaseRunning {
		if err := s.store.Release(ctx, a.ID); err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	return a, nil
}

// errStale aborts a mutation whose status report is older than one
// already applied.
var errStale = errors.New("stale status report")

func phaseFor(state string, wantRunning bool) string {
	switch state {
	case api.ContainerRunning:
		return api.PhaseRunning
	case api.ContainerPaused:
		return api.PhaseSuspended
	case api.ContainerCreated:
		if wantRunning {
			return api.PhaseProvisioning
		}
		return api.PhaseCreated
	case api.ContainerExited:
		return api.PhaseStopped
	case api.ContainerMissing:
		return api.PhaseError
	}
	return api.PhaseCreated
}

// mutateAgent applies f to the latest copy of an agent and writes it,
// retrying on a concurrent update.
func (s *Server) mutateAgent(ctx context.Context, id string, f func(*store.Agent) error) (*store.Agent, error) {
	for range 20 {
		a, err := s.store.GetAgent(ctx, id)
		if err != nil {
			if isNotFound(err) {
				return nil, api.NotFound(api.CodeAgentNotFound, "agent not found")
			}
			return nil, err
		}
		if err := f(a); err != nil {
			return nil, err
		}
		a.UpdatedAt = time.Now().UTC()
		err = s.store.UpdateAgent(ctx, a)
		if err == nil {
			return a, nil
		}
		if isNotFound(err) { // deleted meanwhile
			return nil, api.NotFound(api.CodeAgentNotFound, "agent not found")
		}
		if !isConflict(err) {
			return nil, err
		}
	}
	return nil, api.Conflict(api.CodeConflict, "agent is being changed concurrently; try again")
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
