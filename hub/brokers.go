package hub

import (
	"context"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/store"
)

func (s *Server) brokerView(ctx context.Context, b *store.Broker, counts map[string]int) (api.RuntimeBroker, error) {
	projects, err := s.store.BrokerProjects(ctx, b.ID)
	if err != nil {
		return api.RuntimeBroker{}, err
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

func (s *Server) loadBroker(ctx context.Context, ref string) (*store.Broker, error) {
	b, err := s.store.GetBroker(ctx, ref)
	if isNotFound(err) {
		return nil, api.NotFound(api.CodeBrokerNotFound, "runtime broker %q not found", ref)
	}
	return b, err
}

// issueBroker creates a broker record with a fresh signing secret and
// returns its one-time credentials.
func (s *Server) issueBroker(ctx context.Context, name, createdBy string, autoProvide bool) (api.BrokerCredentials, error) {
	if err := validName("runtime broker", name); err != nil {
		return api.BrokerCredentials{}, err
	}
	secret := newSecret(32)
	now := time.Now().UTC()
	b := &store.Broker{ID: mustV7(), Name: name, Status: api.BrokerOffline, Capabilities: []string{},
		AutoProvide: autoProvide, Secret: []byte(hex.EncodeToString(secret)), CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateBroker(ctx, b); err != nil {
		if isExists(err) {
			return api.BrokerCredentials{}, api.Conflict(api.CodeAlreadyExists,
				"a runtime broker named %q is already registered; deregister it first or choose another --name", name)
		}
		return api.BrokerCredentials{}, err
	}
	s.log.Info("runtime broker registered", "broker", name, "broker_id", b.ID, "by", createdBy)
	return api.BrokerCredentials{BrokerID: b.ID, Name: name, Secret: string(b.Secret), HubURL: s.opts.PublicURL}, nil
}

func (s *Server) handleRegisterBroker(w http.ResponseWriter, r *http.Request, c *Caller) {
	var req api.RegisterBrokerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := requireUser(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := requireWriter(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.JoinToken != "" {
		s.writeError(w, r, api.BadRequest("joinToken belongs to POST /api/v1/runtime-brokers/join"))
		return
	}
	creds, err := s.issueBroker(r.Context(), req.Name, c.ID, req.AutoProvide)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, creds)
}

// handleJoinBroker registers a broker with a one-time join token instead of
// a user's credentials.
func (s *Server) handleJoinBroker(w http.ResponseWriter, r *http.Request) {
	var req api.RegisterBrokerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.JoinToken == "" {
		s.writeError(w, r, api.Unauthorized("a join token is required"))
		return
	}
	if err := validName("runtime broker", req.Name); err != nil {
		s.writeError(w, r, err)
		return
	}
	jt, err := s.store.ConsumeJoinToken(r.Context(), hashToken(req.JoinToken), time.Now().UTC())
	if err != nil {
		s.log.Warn("join token rejected", "broker", req.Name)
		s.writeError(w, r, api.Unauthorized("invalid, used or expired join token"))
		return
	}
	creds, err := s.issueBroker(r.Context(), req.Name, jt.CreatedBy, req.AutoProvide)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, creds)
}

func (s *Server) handleCreateJoinToken(w http.ResponseWriter, r *http.Request, c *Caller) {
	var req api.CreateJoinTokenRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := requireAdmin(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	ttl := time.Hour
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > 30*24*time.Hour {
			s.writeError(w, r, api.BadRequest("ttl must be a positive Go duration up to 720h"))
			return
		}
		ttl = d
	}
	tok := "scj_" + hex.EncodeToString(newSecret(24))
	now := time.Now().UTC()
	jt := &store.JoinToken{Hash: hashToken(tok), Name: req.Name, CreatedBy: c.ID, ExpiresAt: now.Add(ttl), CreatedAt: now}
	if err := s.store.CreateJoinToken(r.Context(), jt); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.JoinToken{Token: tok, Name: req.Name, ExpiresAt: jt.ExpiresAt})
}

func (s *Server) handleListBrokers(w http.ResponseWriter, r *http.Request, c *Caller) {
	page, err := pageFrom(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, next, total, err := s.store.ListBrokers(r.Context(), page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	counts, err := s.store.ReservationCounts(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.List[api.RuntimeBroker]{Items: make([]api.RuntimeBroker, 0, len(items)), NextCursor: next, Total: total}
	for _, b := range items {
		v, err := s.brokerView(r.Context(), b, counts)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out.Items = append(out.Items, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetBroker(w http.ResponseWriter, r *http.Request, c *Caller) {
	b, err := s.loadBroker(r.Context(), r.PathValue("broker"))
	if err == nil && c.Kind == CallerBroker && c.ID != b.ID {
		err = api.NotFound(api.CodeBrokerNotFound, "runtime broker %q not found", r.PathValue("broker"))
	}
	s.writeBroker(w, r, b, err, http.StatusOK)
}

func (s *Server) writeBroker(w http.ResponseWriter, r *http.Request, b *store.Broker, err error, status int) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := s.store.CountReservations(r.Context(), b.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.brokerView(r.Context(), b, map[string]int{b.ID: n})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

func (s *Server) handleUpdateBroker(w http.ResponseWriter, r *http.Request, c *Caller) {
	var req api.UpdateBrokerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := requireAdmin(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.loadBroker(r.Context(), r.PathValue("broker"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.AutoProvide != nil {
		b.AutoProvide = *req.AutoProvide
	}
	if req.Settings != nil && req.Settings.MaxAgents != nil {
		if *req.Settings.MaxAgents < 0 {
			s.writeError(w, r, api.BadRequest("maxAgents must be 0 (unlimited) or more"))
			return
		}
		b.Settings.MaxAgents = req.Settings.MaxAgents
	}
	if req.ClearMaxAgents {
		b.Settings.MaxAgents = nil
	}
	b.UpdatedAt = time.Now().UTC()
	err = s.store.UpdateBroker(r.Context(), b)
	s.writeBroker(w, r, b, err, http.StatusOK)
}

func (s *Server) handleDeregisterBroker(w http.ResponseWriter, r *http.Request, c *Caller) {
	b, err := s.loadBroker(r.Context(), r.PathValue("broker"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case c.Kind == CallerBroker && c.ID == b.ID:
	case c.Kind == CallerUser && (c.Role == api.RoleAdmin || c.ID == b.CreatedBy):
	default:
		s.writeError(w, r, api.Forbidden("deregistering a runtime broker needs the hub admin role or having registered it"))
		return
	}
	if err := s.store.DeleteBroker(r.Context(), b.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	if sess := s.sessions.get(b.ID); sess != nil {
		_ = sess.conn.Close("deregistered")
	}
	s.log.Info("runtime broker deregistered", "broker", b.Name, "broker_id", b.ID, "by", c.ID)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleProvide(w http.ResponseWriter, r *http.Request, c *Caller) {
	s.providerLink(w, r, c, true)
}

func (s *Server) handleWithdraw(w http.ResponseWriter, r *http.Request, c *Caller) {
	s.providerLink(w, r, c, false)
}

func (s *Server) providerLink(w http.ResponseWriter, r *http.Request, c *Caller, link bool) {
	b, err := s.loadBroker(r.Context(), r.PathValue("broker"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if c.Kind != CallerUser { // linking updates the project; agents never do
		s.writeError(w, r, api.Forbidden("only signed-in users can change a project's runtime brokers"))
		return
	}
	if err := requireWriter(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	if link {
		err = s.store.LinkProvider(r.Context(), p.ID, b.ID)
	} else {
		err = s.store.UnlinkProvider(r.Context(), p.ID, b.ID)
		if isNotFound(err) {
			err = nil // withdrawing twice is fine
		}
	}
	s.writeBroker(w, r, b, err, http.StatusOK)
}
