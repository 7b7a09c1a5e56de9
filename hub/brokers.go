package hub

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/store"
)

// brokerView is a broker as c may see it: a caller confined to one
// project (a token, an agent) sees only that project among the broker's.
func (s *Server) brokerView(ctx context.Context, c *Caller, b *store.Broker, counts map[string]int) (api.RuntimeBroker, error) {
	projects, err := s.store.BrokerProjects(ctx, b.ID)
	if err != nil {
		return api.RuntimeBroker{}, err
	}
	if c != nil && c.ProjectID != "" {
		projects = slices.DeleteFunc(projects, func(p string) bool { return p != c.ProjectID })
	}
	if projects == nil {
		projects = []string{}
	}
	lim, err := s.hubLimits(ctx)
	if err != nil {
		return api.RuntimeBroker{}, err
	}
	v := api.RuntimeBroker{ID: b.ID, Name: b.Name, Status: api.BrokerOffline, Version: b.Version,
		ProtocolVersion: b.ProtocolVersion, Capabilities: b.Capabilities, Runtime: b.Runtime, Profiles: b.Profiles,
		Settings: b.Settings, AutoProvide: b.AutoProvide, Projects: projects, RunningAgents: counts[b.ID],
		EffectiveMaxAgents: placement.EffectiveLimit(b.Settings.MaxAgents, lim.MaxAgentsPerBroker),
		CreatedAt:          b.CreatedAt, UpdatedAt: b.UpdatedAt}
	if v.Capabilities == nil {
		v.Capabilities = []string{}
	}
	last := b.LastSeen
	if sess := s.sessions.get(b.ID); sess != nil {
		v.Status = api.BrokerOnline
		last = sess.conn.LastSeen().UTC()
	}
	if !last.IsZero() {
		v.LastSeen = &last
	}
	return v, nil
}

// loadBroker resolves {broker} and checks that c may see it and do a on
// it. A broker the caller cannot see is answered exactly like an unknown
// one: 404 runtime_broker_not_found.
func (s *Server) loadBroker(ctx context.Context, c *Caller, ref string, a authz.Action) (*store.Broker, error) {
	b, err := s.store.GetBroker(ctx, ref)
	if isNotFound(err) {
		markChecked(ctx)
		return nil, brokerNotFound(ref)()
	}
	if err != nil {
		return nil, err
	}
	if ok, err := s.brokerVisible(ctx, c, b, ""); err != nil || !ok {
		if err == nil {
			s.log.Info("request refused", "caller", c.Principal(), "action", a, "reason", "broker not visible")
			err = brokerNotFound(ref)()
		}
		return nil, err
	}
	if a != authz.BrokerRead {
		if err := s.authorize(ctx, c, a, authz.Resource{Broker: &authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide}}, brokerNotFound(ref)); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// brokerVisible: AutoProvide on, or the broker serves the project at hand
// (projectID, else the caller's own project), or the caller has
// broker.read. It counts as the request's authorization check.
func (s *Server) brokerVisible(ctx context.Context, c *Caller, b *store.Broker, projectID string) (bool, error) {
	markChecked(ctx)
	res := authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide}
	if authz.Visible(*c, res) {
		return true, nil
	}
	if projectID == "" {
		projectID = c.ProjectID
	}
	if projectID == "" {
		return false, nil
	}
	projects, err := s.store.BrokerProjects(ctx, b.ID)
	if err != nil {
		return false, err
	}
	return authz.Visible(*c, brokerRes(b, projects, projectID)), nil
}

// newBrokerRecord is a new, offline broker with a fresh signing secret,
// and that secret: the record holds it sealed (see signing_keys.go), so
// the broker's credentials are made from the plain one.
func (s *Server) newBrokerRecord(name, createdBy string, autoProvide bool) (*store.Broker, string) {
	now := time.Now().UTC()
	id, secret := mustV7(), hex.EncodeToString(newSecret(32))
	return &store.Broker{ID: id, Name: name, Status: api.BrokerOffline, Capabilities: []string{},
		AutoProvide: autoProvide, Secret: s.storedKey(brokerKeyPurpose(id), []byte(secret)), CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}, secret
}

// issueBroker creates a broker record with a fresh signing secret and
// returns its one-time credentials.
func (s *Server) issueBroker(ctx context.Context, name, createdBy string, autoProvide bool) (api.BrokerCredentials, error) {
	if err := validName("runtime broker", name); err != nil {
		return api.BrokerCredentials{}, err
	}
	b, secret := s.newBrokerRecord(name, createdBy, autoProvide)
	if err := s.store.CreateBroker(ctx, b); err != nil {
		if isExists(err) {
			return api.BrokerCredentials{}, brokerNameTaken(name, false)
		}
		return api.BrokerCredentials{}, err
	}
	return s.brokerIssued(b, secret), nil
}

func brokerNameTaken(name string, byToken bool) error {
	if byToken {
		return api.Conflict(api.CodeAlreadyExists,
			"a runtime broker named %q is already registered; this join token is for that name, so deregister that broker first (the token stays valid)", name)
	}
	return api.Conflict(api.CodeAlreadyExists,
		"a runtime broker named %q is already registered; deregister it first or choose another --name", name)
}

// brokerIssued logs a new registration and returns its credentials.
func (s *Server) brokerIssued(b *store.Broker, secret string) api.BrokerCredentials {
	s.log.Info("runtime broker registered", "broker", b.Name, "broker_id", b.ID, "by", b.CreatedBy)
	return api.BrokerCredentials{BrokerID: b.ID, Name: b.Name, Secret: secret, HubURL: s.opts.PublicURL}
}

func (s *Server) handleRegisterBroker(r *http.Request, c *Caller) (int, any, error) {
	if err := s.authorize(r.Context(), c, authz.BrokerRegister, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.RegisterBrokerRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.JoinToken != "" {
		return 0, nil, api.BadRequest("joinToken belongs to POST /api/v1/runtime-brokers/join")
	}
	creds, err := s.issueBroker(r.Context(), req.Name, c.ID, req.AutoProvide)
	return http.StatusCreated, creds, err
}

// maxJoinBody bounds a join request's body.
const maxJoinBody = 64 << 10

// handleJoinBroker registers a broker with a one-time join token instead of
// a user's credentials. It is a public route: the token is the credential.
// A token made for a name registers that name (the request's name, the
// broker's host name by default, is used only when the token names none).
// The token is spent in the transaction that creates the broker, so a
// refused join (a taken name) can be retried with it. A bad token counts
// as a failed authentication of the client's address.
func (s *Server) handleJoinBroker(w http.ResponseWriter, r *http.Request) {
	ip := clientIP(r)
	if blocked, wait := s.rl.authFail.blocked(ip, time.Now()); blocked {
		s.refuseRateLimited(w, r, wait, "failed authentications")
		return
	}
	// A join body is a name and a token: bound it well below the API's
	// limit, since anyone may send one.
	r.Body = http.MaxBytesReader(w, r.Body, maxJoinBody)
	s.serveAPI(func(r *http.Request, _ *Caller) (int, any, error) {
		var req api.RegisterBrokerRequest
		if err := decodeJSON(r, &req); err != nil {
			return 0, nil, err
		}
		if req.JoinToken == "" {
			s.rl.authFail.fail(ip, time.Now())
			return 0, nil, api.Unauthorized("a join token is required")
		}
		var name string // the name build chose: the token's, else the request's
		var tokenNamed bool
		var secret string
		b, err := s.store.JoinBroker(r.Context(), hashToken(req.JoinToken), time.Now().UTC(), func(jt *store.JoinToken) (*store.Broker, error) {
			name, tokenNamed = cmp.Or(jt.Name, req.Name), jt.Name != ""
			if name == "" {
				return nil, api.BadRequest("this join token names no runtime broker: give the broker a name (--name)")
			}
			if err := validName("runtime broker", name); err != nil {
				return nil, err
			}
			var b *store.Broker
			b, secret = s.newBrokerRecord(name, jt.CreatedBy, req.AutoProvide)
			return b, nil
		})
		switch {
		case isNotFound(err) || errors.Is(err, store.ErrTokenUsed):
			s.rl.authFail.fail(ip, time.Now())
			s.log.Warn("join token rejected", "broker", req.Name)
			return 0, nil, api.Unauthorized("invalid, used or expired join token")
		case isExists(err):
			// The token holder was given the token's name with it.
			s.log.Info("join refused: the name is taken; the join token stays valid", "broker", name)
			return 0, nil, brokerNameTaken(name, tokenNamed)
		case err != nil:
			return 0, nil, err
		}
		return http.StatusCreated, s.brokerIssued(b, secret), nil
	})(w, r, nil)
}

func (s *Server) handleCreateJoinToken(r *http.Request, c *Caller) (int, any, error) {
	if err := s.authorize(r.Context(), c, authz.JoinTokenCreate, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.CreateJoinTokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	// The name is the one the join will register: refuse a bad one now,
	// not when the broker tries to join.
	if req.Name != "" {
		if err := validName("runtime broker", req.Name); err != nil {
			return 0, nil, err
		}
	}
	ttl := time.Hour
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > 30*24*time.Hour {
			return 0, nil, api.BadRequest("ttl must be a positive Go duration up to 720h")
		}
		ttl = d
	}
	tok := "scj_" + hex.EncodeToString(newSecret(24))
	now := time.Now().UTC()
	jt := &store.JoinToken{Hash: hashToken(tok), Name: req.Name, CreatedBy: c.ID, ExpiresAt: now.Add(ttl), CreatedAt: now}
	if err := s.store.CreateJoinToken(r.Context(), jt); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, api.JoinToken{Token: tok, Name: req.Name, ExpiresAt: jt.ExpiresAt}, nil
}

func (s *Server) handleListBrokers(r *http.Request, c *Caller) (int, any, error) {
	page, err := pageFrom(r)
	if err != nil {
		return 0, nil, err
	}
	var items []*store.Broker
	var next string
	var total int
	if authz.Can(*c, authz.BrokerRead, authz.Resource{}) == nil {
		markChecked(r.Context())
		items, next, total, err = s.store.ListBrokers(r.Context(), page)
	} else {
		items, err = s.visibleBrokers(r.Context(), c)
		total = len(items)
	}
	if err != nil {
		return 0, nil, err
	}
	counts, err := s.store.ReservationCounts(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := api.List[api.RuntimeBroker]{Items: make([]api.RuntimeBroker, 0, len(items)), NextCursor: next, Total: total}
	for _, b := range items {
		v, err := s.brokerView(r.Context(), c, b, counts)
		if err != nil {
			return 0, nil, err
		}
		out.Items = append(out.Items, v)
	}
	return http.StatusOK, out, nil
}

func (s *Server) handleGetBroker(r *http.Request, c *Caller) (int, any, error) {
	b, err := s.loadBroker(r.Context(), c, r.PathValue("broker"), authz.BrokerRead)
	if err != nil {
		return 0, nil, err
	}
	return s.brokerAnswer(r.Context(), c, b)
}

// brokerAnswer is the 200 answer with one broker's view.
func (s *Server) brokerAnswer(ctx context.Context, c *Caller, b *store.Broker) (int, any, error) {
	n, err := s.store.CountReservations(ctx, b.ID)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.brokerView(ctx, c, b, map[string]int{b.ID: n})
	return http.StatusOK, v, err
}

func (s *Server) handleUpdateBroker(r *http.Request, c *Caller) (int, any, error) {
	b, err := s.loadBroker(r.Context(), c, r.PathValue("broker"), authz.BrokerManage)
	if err != nil {
		return 0, nil, err
	}
	var req api.UpdateBrokerRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	// The per-broker agent limit is the admins' (the spec: admins override
	// the hub-wide default per broker); AutoProvide is the owner's call.
	if (req.Settings != nil && req.Settings.MaxAgents != nil) || req.ClearMaxAgents {
		if err := s.authorize(r.Context(), c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
			return 0, nil, err
		}
	}
	if req.AutoProvide != nil {
		b.AutoProvide = *req.AutoProvide
	}
	if req.Settings != nil && req.Settings.MaxAgents != nil {
		if *req.Settings.MaxAgents < 0 {
			return 0, nil, api.BadRequest("maxAgents must be 0 (unlimited) or more")
		}
		b.Settings.MaxAgents = req.Settings.MaxAgents
	}
	if req.ClearMaxAgents {
		b.Settings.MaxAgents = nil
	}
	b.UpdatedAt = time.Now().UTC()
	if err := s.store.UpdateBroker(r.Context(), b); err != nil {
		return 0, nil, err
	}
	return s.brokerAnswer(r.Context(), c, b)
}

// handleDeregisterBroker removes a broker. One that still has agents is
// refused with the list (409 runtime_broker_has_agents) unless forced
// (?force=true): the Hub cannot tell whether their workloads still run,
// so it never drops them silently. A forced deregistration leaves the
// agents' records and reservations in place; what needs the broker then
// answers 409 runtime_broker_missing, and a forced agent delete removes
// the record. The broker stops being any project's default and the Hub's
// default_runtime_broker.
func (s *Server) handleDeregisterBroker(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	b, err := s.loadBroker(ctx, c, r.PathValue("broker"), authz.BrokerDeregister)
	if err != nil {
		return 0, nil, err
	}
	force, err := forceParam(r)
	if err != nil {
		return 0, nil, err
	}
	stranded, total, err := s.brokerAgents(ctx, b.ID, 1000)
	if err != nil {
		return 0, nil, err
	}
	if !force && total > 0 {
		return 0, nil, s.brokerHasAgents(ctx, c, b, stranded, total)
	}
	if err := s.store.DeleteBroker(ctx, b.ID, force); err != nil {
		if isConflict(err) { // an agent was placed on it meanwhile
			if stranded, total, err = s.brokerAgents(ctx, b.ID, 1000); err == nil {
				err = s.brokerHasAgents(ctx, c, b, stranded, max(total, 1))
			}
		}
		return 0, nil, err
	}
	if sess := s.sessions.get(b.ID); sess != nil {
		_ = sess.conn.Close("deregistered")
	}
	s.forgetHubDefault(context.WithoutCancel(ctx), b)
	if total > 0 {
		ids := make([]string, 0, len(stranded))
		for _, a := range stranded {
			ids = append(ids, a.ID)
		}
		s.log.Warn("runtime broker deregistered with force: its agents are left without a broker, and their workloads may still run on that machine",
			"broker", b.Name, "broker_id", b.ID, "by", c.Principal(), "agents", total, "agent_ids", ids)
	} else {
		s.log.Info("runtime broker deregistered", "broker", b.Name, "broker_id", b.ID, "by", c.Principal())
	}
	return http.StatusNoContent, nil, nil
}

// forceParam reads ?force= (absent: false).
func forceParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("force")
	if v == "" {
		return false, nil
	}
	f, err := strconv.ParseBool(v)
	if err != nil {
		return false, api.BadRequest("force must be true or false")
	}
	return f, nil
}

// brokerAgents returns up to limit of the agents assigned to a broker and
// how many there are, counting those that hold a slot on it while
// assigned elsewhere.
func (s *Server) brokerAgents(ctx context.Context, brokerID string, limit int) ([]*store.Agent, int, error) {
	agents, _, total, err := s.store.ListAgents(ctx, store.AgentFilter{BrokerID: brokerID}, store.Page{Limit: limit})
	if err != nil {
		return nil, 0, err
	}
	if total == 0 {
		if total, err = s.store.CountReservations(ctx, brokerID); err != nil {
			return nil, 0, err
		}
	}
	return agents, total, nil
}

// brokerHasAgents is the refusal of a deregistration without force. It
// names the agents the caller may read (project/agent, at most 50) and
// counts all of them: a broker's owner need not see every project its
// broker serves.
func (s *Server) brokerHasAgents(ctx context.Context, c *Caller, b *store.Broker, agents []*store.Agent, total int) error {
	names := []string{}
	projects := map[string]*store.Project{}
	for _, a := range agents {
		if len(names) == 50 {
			break
		}
		p, ok := projects[a.ProjectID]
		if !ok {
			var err error
			if p, err = s.store.GetProject(ctx, a.ProjectID); err != nil && !isNotFound(err) {
				return err
			}
			projects[a.ProjectID] = p
		}
		if p != nil && authz.Can(*c, authz.AgentRead, authz.Resource{Project: projectRes(p), Agent: agentRes(a)}) == nil {
			names = append(names, p.Name+"/"+a.Slug)
		}
	}
	return api.Conflict(api.CodeBrokerHasAgents,
		"runtime broker %q still has %d agent(s); delete them first, or deregister with --force to leave them without a broker (their workloads may keep running on that machine)",
		b.Name, total).WithDetail("agents", names).WithDetail("total", total)
}

// forgetHubDefault clears the Hub's default_runtime_broker when it names
// a deregistered broker, so the settings stop showing it. It is a write
// of its own after the store's transaction (projects' defaults are
// cleared in that one); a default it leaves behind (a kill -9 in
// between) does no harm: it holds the deleted broker's ID, which the
// cascade and GET /admin/settings read as no default (liveBrokerRef).
func (s *Server) forgetHubDefault(ctx context.Context, b *store.Broker) {
	v, err := s.hubSettings(ctx)
	if err == nil {
		ref := v.AgentDefaults.DefaultRuntimeBroker
		if ref == "" || (ref != b.ID && ref != b.Name) {
			return
		}
		v.AgentDefaults.DefaultRuntimeBroker = ""
		err = s.saveSetting(ctx, settingHub, v, func() { s.settings = &v })
	}
	if err != nil {
		s.log.Error("could not clear the Hub's default_runtime_broker after a deregistration", "broker", b.Name, "broker_id", b.ID, "err", err)
		return
	}
	s.log.Info("cleared the Hub's default_runtime_broker: its broker was deregistered", "broker", b.Name, "broker_id", b.ID)
}

// brokerMissing answers for an agent whose broker was deregistered (with
// force): nothing can reach its workload, and Scion never moves it.
func brokerMissing(a *store.Agent) error {
	return api.Conflict(api.CodeBrokerMissing,
		"agent %q's runtime broker is no longer registered, so nothing can reach it; delete the agent with --force to remove its record (its workload may still run on that machine)",
		a.Slug).WithDetail("brokerId", a.BrokerID)
}

// orBrokerMissing turns the offline answer for a's broker into
// brokerMissing when that broker is no longer registered. It reads the
// store only when the broker has no session.
func (s *Server) orBrokerMissing(ctx context.Context, a *store.Agent, err error) error {
	if a.BrokerID == "" || !api.IsCode(err, api.CodeBrokerOffline) {
		return err
	}
	if _, gerr := s.store.GetBroker(ctx, a.BrokerID); isNotFound(gerr) {
		return brokerMissing(a)
	}
	return err
}

func (s *Server) handleProvide(r *http.Request, c *Caller) (int, any, error) {
	return s.providerLink(r, c, true)
}

func (s *Server) handleWithdraw(r *http.Request, c *Caller) (int, any, error) {
	return s.providerLink(r, c, false)
}

func (s *Server) providerLink(r *http.Request, c *Caller, link bool) (int, any, error) {
	// Linking a broker to a project, or unlinking it, is a project
	// update; the caller must also be able to see and dispatch to the
	// broker (so a project owner cannot borrow a broker they cannot use).
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"), authz.ProjectUpdate)
	if err != nil {
		return 0, nil, err
	}
	ref := r.PathValue("broker")
	b, err := s.store.GetBroker(r.Context(), ref)
	if isNotFound(err) {
		return 0, nil, brokerNotFound(ref)()
	}
	if err != nil {
		return 0, nil, err
	}
	projects, err := s.store.BrokerProjects(r.Context(), b.ID)
	if err != nil {
		return 0, nil, err
	}
	res := brokerRes(b, projects, p.ID)
	if !authz.Visible(*c, res) {
		return 0, nil, brokerNotFound(ref)()
	}
	if link {
		if err := s.refusal(c, authz.BrokerDispatch, authz.Dispatchable(*c, res), nil); err != nil {
			return 0, nil, err
		}
	}
	if link {
		err = s.store.LinkProvider(r.Context(), p.ID, b.ID)
	} else if err = s.store.UnlinkProvider(r.Context(), p.ID, b.ID); isNotFound(err) {
		err = nil // withdrawing twice is fine
	}
	if err != nil {
		return 0, nil, err
	}
	return s.brokerAnswer(r.Context(), c, b)
}

// visibleBrokers lists, in one page, the brokers a caller without
// broker.read can see: AutoProvide ones and those serving its project.
func (s *Server) visibleBrokers(ctx context.Context, c *Caller) ([]*store.Broker, error) {
	markChecked(ctx)
	var serving []string
	if c.ProjectID != "" {
		var err error
		if serving, err = s.store.ProjectProviders(ctx, c.ProjectID); err != nil {
			return nil, err
		}
	}
	var out []*store.Broker
	page := store.Page{Limit: 1000}
	for {
		bs, next, _, err := s.store.ListBrokers(ctx, page)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if authz.Visible(*c, authz.BrokerRes{ID: b.ID, AutoProvide: b.AutoProvide, ServesProject: slices.Contains(serving, b.ID)}) {
				out = append(out, b)
			}
		}
		if next == "" {
			return out, nil
		}
		page.Cursor = next
	}
}
