package hub

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/hub/storeerr"
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
	lim, err := s.settings.Limits(ctx)
	if err != nil {
		return api.RuntimeBroker{}, err
	}
	v := api.RuntimeBroker{ID: b.ID, Name: b.Name, Status: api.BrokerOffline, Version: b.Version,
		ProtocolVersion: b.ProtocolVersion, Capabilities: b.Capabilities, Runtime: b.Runtime, Profiles: b.Profiles, RuntimeTarget: b.RuntimeTarget,
		Settings: b.Settings, AutoProvide: b.AutoProvide, Projects: projects, RunningAgents: counts[b.ID],
		EffectiveMaxAgents: placement.EffectiveLimit(b.Settings.MaxAgents, lim.MaxAgentsPerBroker),
		CreatedAt:          b.CreatedAt, UpdatedAt: b.UpdatedAt}
	if v.Capabilities == nil {
		v.Capabilities = []string{}
	}
	last := b.LastSeen
	if sess := s.sessions.Get(b.ID); sess != nil {
		v.Status = api.BrokerOnline
		last = sess.Conn.LastSeen().UTC()
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
	if err != nil {
		if isNotFound(err) {
			httpapi.MarkChecked(ctx)
		}
		return nil, storeerr.Map(err, api.CodeBrokerNotFound, "runtime broker "+api.Quote(ref))
	}
	if ok, err := s.brokerVisible(ctx, c, b, ""); err != nil || !ok {
		if err == nil {
			s.log.Info("request refused", "caller", c.Principal(), "action", a, "reason", "broker not visible")
			err = httpapi.BrokerNotFound(ref)()
		}
		return nil, err
	}
	if a != authz.BrokerRead {
		if err := httpapi.Authorize(ctx, s.log, c, a, authz.Resource{Broker: &authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide}}, httpapi.BrokerNotFound(ref)); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// brokerVisible: AutoProvide on, or the broker serves the project at hand
// (projectID, else the caller's own project), or the caller has
// broker.read. It counts as the request's authorization check.
func (s *Server) brokerVisible(ctx context.Context, c *Caller, b *store.Broker, projectID string) (bool, error) {
	httpapi.MarkChecked(ctx)
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

func (s *Server) handleListBrokers(r *http.Request, c *Caller) (int, any, error) {
	page, err := httpapi.PageFrom(r)
	if err != nil {
		return 0, nil, err
	}
	var items []*store.Broker
	var next string
	var total int
	if authz.Can(*c, authz.BrokerRead, authz.Resource{}) == nil {
		httpapi.MarkChecked(r.Context())
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
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	// The per-broker agent limit is the admins' (the spec: admins override
	// the hub-wide default per broker); AutoProvide is the owner's call.
	if (req.Settings != nil && req.Settings.MaxAgents != nil) || req.ClearMaxAgents {
		if err := httpapi.Authorize(r.Context(), s.log, c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
			return 0, nil, err
		}
	}
	if req.Settings != nil && req.Settings.MaxAgents != nil && *req.Settings.MaxAgents < 0 {
		return 0, nil, api.BadRequest("maxAgents must be 0 (unlimited) or more")
	}
	// Only the fields the request names are written, onto the record as
	// it is when written: a hello in between keeps what it recorded.
	b, err = s.store.UpdateBrokerWith(r.Context(), b.ID, func(b *store.Broker) error {
		if req.AutoProvide != nil {
			b.AutoProvide = *req.AutoProvide
		}
		if req.Settings != nil && req.Settings.MaxAgents != nil {
			b.Settings.MaxAgents = req.Settings.MaxAgents
		}
		if req.ClearMaxAgents {
			b.Settings.MaxAgents = nil
		}
		b.UpdatedAt = time.Now().UTC()
		return nil
	})
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeBrokerNotFound, "runtime broker "+api.Quote(r.PathValue("broker")))
	}
	return s.brokerAnswer(r.Context(), c, b)
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
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeBrokerNotFound, "runtime broker "+api.Quote(ref))
	}
	projects, err := s.store.BrokerProjects(r.Context(), b.ID)
	if err != nil {
		return 0, nil, err
	}
	res := brokerRes(b, projects, p.ID)
	if !authz.Visible(*c, res) {
		return 0, nil, httpapi.BrokerNotFound(ref)()
	}
	if link {
		if err := httpapi.Refusal(s.log, c, authz.BrokerDispatch, authz.Dispatchable(*c, res), nil); err != nil {
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
	httpapi.MarkChecked(ctx)
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
