package hub

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
)

// Hub settings and limits are read on every create, so they are cached in
// memory and refreshed on every write through this Hub.
//
// TODO(multi-replica): with several Hub replicas on one PostgreSQL, a
// write on one replica is seen by the others only after their restart;
// a LISTEN/NOTIFY invalidation belongs here then.

func (s *Server) hubSettings(ctx context.Context) (api.HubSettings, error) {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if s.settings != nil {
		return *s.settings, nil
	}
	var v api.HubSettings
	if err := s.loadSetting(ctx, settingHub, &v); err != nil {
		return v, err
	}
	s.settings = &v
	return v, nil
}

func (s *Server) hubLimits(ctx context.Context) (api.Limits, error) {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if s.limits != nil {
		return *s.limits, nil
	}
	v := api.Limits{MaxAgentsPerBroker: api.DefaultMaxAgentsPerBroker}
	if err := s.loadSetting(ctx, settingLimits, &v); err != nil {
		return v, err
	}
	s.limits = &v
	return v, nil
}

func (s *Server) loadSetting(ctx context.Context, key string, v any) error {
	b, err := s.store.GetSetting(ctx, key)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (s *Server) handleGetSettings(r *http.Request, c *Caller) (int, any, error) {
	if err := s.authorize(r.Context(), c, authz.HubRead, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	v, err := s.hubSettings(r.Context())
	if err != nil {
		return 0, nil, err
	}
	if v.AgentDefaults.DefaultRuntimeBroker, err = s.liveBrokerRef(r.Context(), v.AgentDefaults.DefaultRuntimeBroker); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// liveBrokerRef is ref when it names a registered broker, else "". The
// Hub's default_runtime_broker can name a deregistered broker: the
// deregistration clears it in a write of its own, after the store's
// transaction, which a Hub killed in between never makes, and a PUT of
// the settings that checked the broker just before it went writes it
// back. Such a default is none: it holds an ID (see handlePutSettings),
// which no broker registered later has, so the cascade never finds it
// either.
func (s *Server) liveBrokerRef(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	_, err := s.store.GetBroker(ctx, ref)
	if isNotFound(err) {
		return "", nil
	}
	return ref, err
}

func (s *Server) handlePutSettings(r *http.Request, c *Caller) (int, any, error) {
	if err := s.authorize(r.Context(), c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var v api.HubSettings
	if err := decodeJSON(r, &v); err != nil {
		return 0, nil, err
	}
	if err := checkAgentDefaults(v.AgentDefaults); err != nil {
		return 0, nil, err
	}
	// The default is kept as the broker's ID, whether it was given by
	// name or ID: a broker deregistered and another registered under its
	// name must not become the default by that name.
	if ref := v.AgentDefaults.DefaultRuntimeBroker; ref != "" {
		b, err := s.store.GetBroker(r.Context(), ref)
		if err != nil {
			return 0, nil, storeErr(err, api.CodeBrokerNotFound, "default_runtime_broker: runtime broker "+api.Quote(ref))
		}
		v.AgentDefaults.DefaultRuntimeBroker = b.ID
	}
	if err := s.saveSetting(r.Context(), settingHub, v, func() { s.settings = &v }); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

func (s *Server) handleGetLimits(r *http.Request, c *Caller) (int, any, error) {
	if err := s.authorize(r.Context(), c, authz.HubRead, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	v, err := s.hubLimits(r.Context())
	return http.StatusOK, v, err
}

func (s *Server) handlePutLimits(r *http.Request, c *Caller) (int, any, error) {
	if err := s.authorize(r.Context(), c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req limitsRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	v, err := req.limits()
	if err != nil {
		return 0, nil, err
	}
	if err := s.saveSetting(r.Context(), settingLimits, v, func() { s.limits = &v }); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// checkAgentDefaults refuses Agent Defaults that every create would then
// fail on, or that would carry a path or control characters to brokers: a
// harness must be a known one, an image a bounded single line.
func checkAgentDefaults(d api.AgentDefaults) error {
	if d.DefaultHarness != "" {
		if err := api.CheckHarness("default_harness", d.DefaultHarness); err != nil {
			return err
		}
	}
	if err := api.CheckText("default_image", d.DefaultImage, api.MaxImageLen); err != nil {
		return err
	}
	return api.CheckText("default_runtime_broker", d.DefaultRuntimeBroker, api.MaxRefLen)
}

// limitsRequest is the body of PUT /admin/limits. The field is a pointer
// so that a body without it is refused: decoded into api.Limits, {} would
// read as 0, which means unlimited.
type limitsRequest struct {
	MaxAgentsPerBroker *int `json:"max_agents_per_broker"`
}

func (r limitsRequest) limits() (api.Limits, error) {
	switch n := r.MaxAgentsPerBroker; {
	case n == nil:
		return api.Limits{}, api.BadRequest("max_agents_per_broker is required: give a number from 0 (unlimited) to 1000000")
	case *n < 0 || *n > 1_000_000:
		return api.Limits{}, api.BadRequest("max_agents_per_broker must be between 0 (unlimited) and 1000000")
	}
	return api.Limits{MaxAgentsPerBroker: *r.MaxAgentsPerBroker}, nil
}

// saveSetting writes a setting and, once it is stored, updates the cached
// copy (cache, run under cfgMu) so readers never see a value the database
// does not hold.
func (s *Server) saveSetting(ctx context.Context, key string, v any, cache func()) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if err := s.store.PutSetting(ctx, key, b); err != nil {
		return err
	}
	cache()
	return nil
}

// pinHubDefault, at start, turns a default_runtime_broker stored by name
// (by a Hub older than IDs there) into its broker's ID, and clears one
// that names no broker (a Hub killed between a deregistration and its
// clearing the setting).
func (s *Server) pinHubDefault(ctx context.Context) error {
	v, err := s.hubSettings(ctx)
	if err != nil || v.AgentDefaults.DefaultRuntimeBroker == "" {
		return err
	}
	ref := v.AgentDefaults.DefaultRuntimeBroker
	b, err := s.store.GetBroker(ctx, ref)
	switch {
	case isNotFound(err):
		v.AgentDefaults.DefaultRuntimeBroker = ""
		s.log.Info("cleared the Hub's default_runtime_broker: its broker is no longer registered", "default_runtime_broker", ref)
	case err != nil:
		return err
	case b.ID == ref:
		return nil
	default:
		v.AgentDefaults.DefaultRuntimeBroker = b.ID
		s.log.Info("the Hub's default_runtime_broker now holds its broker's ID", "broker", b.Name, "broker_id", b.ID)
	}
	return s.saveSetting(ctx, settingHub, v, func() { s.settings = &v })
}
