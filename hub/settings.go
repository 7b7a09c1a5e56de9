package hub

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
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
	if errors.Is(err, store.ErrNotFound) {
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
	return http.StatusOK, v, err
}

func (s *Server) handlePutSettings(r *http.Request, c *Caller) (int, any, error) {
	if err := s.authorize(r.Context(), c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var v api.HubSettings
	if err := decodeJSON(r, &v); err != nil {
		return 0, nil, err
	}
	if ref := v.AgentDefaults.DefaultRuntimeBroker; ref != "" {
		if _, err := s.store.GetBroker(r.Context(), ref); err != nil {
			return 0, nil, api.NotFound(api.CodeBrokerNotFound, "default_runtime_broker: runtime broker %q not found", ref)
		}
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
	var v api.Limits
	if err := decodeJSON(r, &v); err != nil {
		return 0, nil, err
	}
	if v.MaxAgentsPerBroker < 0 || v.MaxAgentsPerBroker > 1_000_000 {
		return 0, nil, api.BadRequest("max_agents_per_broker must be between 0 (unlimited) and 1000000")
	}
	if err := s.saveSetting(r.Context(), settingLimits, v, func() { s.limits = &v }); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
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
