package settings

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

// The keys of the two settings in the store (authstore opens them to
// requests: hub.read and hub.admin).
const (
	keyHub    = authstore.SettingHub
	keyLimits = authstore.SettingLimits
)

// Settings is the Hub's settings and limits: the cache, their one
// writer, and their routes.
type Settings struct {
	store store.Store // the Hub's authorizing store
	log   *slog.Logger
	// system is the Hub's own context, for filling the cache (see the
	// package doc).
	system func() context.Context

	mu     sync.Mutex // the cache, and the writes that refresh it
	hub    *api.HubSettings
	limits *api.Limits
}

// New serves the settings kept in st (the Hub's authorizing store);
// system gives the Hub's own context.
func New(st store.Store, log *slog.Logger, system func() context.Context) *Settings {
	return &Settings{store: st, log: log, system: system}
}

// Routes are the settings' and limits' routes.
func (s *Settings) Routes() []httpapi.Route {
	return []httpapi.Route{
		httpapi.Authed("GET /api/v1/settings", s.handleGetSettings),
		httpapi.Authed("PUT /api/v1/settings", s.handlePutSettings),
		httpapi.Authed("GET /api/v1/admin/limits", s.handleGetLimits),
		httpapi.Authed("PUT /api/v1/admin/limits", s.handlePutLimits),
	}
}

// Hub is the Hub settings (a copy: the caller may change it).
func (s *Settings) Hub(ctx context.Context) (api.HubSettings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.hubLocked(ctx)
	return cloneHubSettings(v), err
}

// hubSettingsLocked is the cached settings, loaded on first use; mu
// is held. The copy shares the cache's Experiments map: callers clone it
// (cloneHubSettings) before they hand it out or change it.
func (s *Settings) hubLocked(ctx context.Context) (api.HubSettings, error) {
	if s.hub != nil {
		return *s.hub, nil
	}
	var v api.HubSettings
	if err := s.load(s.system(), keyHub, &v); err != nil {
		return v, err
	}
	s.hub = &v
	return v, nil
}

// cloneHubSettings is v with its own Experiments map, so that no reader
// changes the cached settings through it.
func cloneHubSettings(v api.HubSettings) api.HubSettings {
	v.Experiments = maps.Clone(v.Experiments)
	return v
}

// Update changes the stored settings with change, which sees
// the current ones and reports whether it changed them: a read-modify-
// write of one field (the Hub clearing a deregistered default broker,
// say) never writes back an older copy over a PUT that came in between,
// such as one turning an experiment on.
func (s *Settings) Update(ctx context.Context, change func(*api.HubSettings) (bool, error)) error {
	_, _, err := s.change(ctx, nil, change)
	return err
}

// change is the one writer of the Hub settings: under mu it
// reads the stored settings and their version (the database's, not the
// cache's, so that a write through another Hub replica is seen), lets
// change edit them, and writes them back with a compare-and-set on that
// version. With ifMatch the caller's version must be the stored one
// (412 precondition_failed otherwise, also when a write through another
// replica wins the compare-and-set); without it a lost compare-and-set is
// retried on the newer settings, which change then sees. It returns the
// settings as stored and their version.
func (s *Settings) change(ctx context.Context, ifMatch *int64, change func(*api.HubSettings) (bool, error)) (api.HubSettings, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 5 {
		cur, ver, err := s.readLocked(ctx)
		if err != nil {
			return cur, 0, err
		}
		if ifMatch != nil && *ifMatch != ver {
			return cur, ver, staleSettings(ver)
		}
		v := cloneHubSettings(cur)
		ok, err := change(&v)
		if err != nil || !ok {
			return cur, ver, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return cur, ver, err
		}
		nv, err := s.store.PutSettingIf(ctx, keyHub, b, ver)
		if errors.Is(err, store.ErrConflict) {
			if ifMatch != nil {
				_, now, _ := s.store.GetSettingVersion(ctx, keyHub)
				return cur, now, staleSettings(now)
			}
			continue
		}
		if err != nil {
			return cur, ver, err
		}
		s.hub = &v
		return cloneHubSettings(v), nv, nil
	}
	return api.HubSettings{}, 0, api.Errorf(api.CodeConflict, "the Hub settings kept changing while this write was made; try again")
}

// readLocked reads the stored settings and their version (0
// when never written) and refreshes the cache; mu is held.
func (s *Settings) readLocked(ctx context.Context) (api.HubSettings, int64, error) {
	var v api.HubSettings
	b, ver, err := s.store.GetSettingVersion(ctx, keyHub)
	if errors.Is(err, store.ErrNotFound) {
		s.hub = &v
		return v, 0, nil
	}
	if err != nil {
		return v, 0, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, 0, err
	}
	s.hub = &v
	return cloneHubSettings(v), ver, nil
}

// The settings' version travels as a strong ETag, "<version>".
func settingsETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// ifMatchVersion reads an If-Match header for the settings: nil when it
// is absent or "*" (the settings always exist), else the version it
// names; one that names none this Hub makes (a weak tag, a list, junk)
// is -1, which matches no version, so the write is refused with 412.
func ifMatchVersion(h string) *int64 {
	h = strings.TrimSpace(h)
	if h == "" || h == "*" {
		return nil
	}
	bad := int64(-1)
	q, ok := strings.CutPrefix(h, `"`)
	if !ok {
		return &bad
	}
	q, ok = strings.CutSuffix(q, `"`)
	if !ok {
		return &bad
	}
	v, err := strconv.ParseInt(q, 10, 64)
	if err != nil || v < 0 {
		return &bad
	}
	return &v
}

func staleSettings(current int64) error {
	return api.Errorf(api.CodePreconditionFailed,
		"the Hub settings changed since they were read (If-Match names another version): read them again and retry").
		WithDetail("etag", settingsETag(current))
}

// Limits is the Hub limits.
func (s *Settings) Limits(ctx context.Context) (api.Limits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits != nil {
		return *s.limits, nil
	}
	v := api.Limits{MaxAgentsPerBroker: api.DefaultMaxAgentsPerBroker}
	if err := s.load(s.system(), keyLimits, &v); err != nil {
		return v, err
	}
	s.limits = &v
	return v, nil
}

func (s *Settings) load(ctx context.Context, key string, v any) error {
	b, err := s.store.GetSetting(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (s *Settings) handleGetSettings(r *http.Request, c *authz.Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.HubRead, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	v, ver, err := s.readLocked(r.Context())
	s.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	if v.AgentDefaults.DefaultRuntimeBroker, err = s.liveBrokerRef(r.Context(), v.AgentDefaults.DefaultRuntimeBroker); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, httpapi.WithETag(settingsView(v), settingsETag(ver)), nil
}

// liveBrokerRef is ref when it names a registered broker, else "". The
// Hub's default_runtime_broker can name a deregistered broker: the
// deregistration clears it in a write of its own, after the store's
// transaction, which a Hub killed in between never makes, and a PUT of
// the settings that checked the broker just before it went writes it
// back. Such a default is none: it holds an ID (see handlePutSettings),
// which no broker registered later has, so the cascade never finds it
// either.
func (s *Settings) liveBrokerRef(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	_, err := s.store.GetBroker(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return ref, err
}

// handlePutSettings applies a partial update (api.HubSettingsUpdate): the
// fields and experiments the body names, nothing else, so two admins
// changing different settings at once both keep their change. If-Match
// makes it conditional on the version the caller read.
func (s *Settings) handlePutSettings(r *http.Request, c *authz.Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var u api.HubSettingsUpdate
	if err := httpapi.DecodeJSON(r, &u); err != nil {
		return 0, nil, err
	}
	if err := u.Validate(); err != nil {
		return 0, nil, err
	}
	d := u.AgentDefaults
	if d == nil {
		d = &api.AgentDefaultsUpdate{}
	}
	// The default is kept as the broker's ID, whether it was given by
	// name or ID: a broker deregistered and another registered under its
	// name must not become the default by that name.
	if ref := d.DefaultRuntimeBroker; ref != nil && *ref != "" {
		b, err := s.store.GetBroker(r.Context(), *ref)
		if err != nil {
			return 0, nil, storeerr.Map(err, api.CodeBrokerNotFound, "default_runtime_broker: runtime broker "+api.Quote(*ref))
		}
		d = &api.AgentDefaultsUpdate{DefaultRuntimeBroker: &b.ID, DefaultHarness: d.DefaultHarness, DefaultImage: d.DefaultImage}
	}
	v, ver, err := s.change(r.Context(), ifMatchVersion(r.Header.Get("If-Match")), func(v *api.HubSettings) (bool, error) {
		before := cloneHubSettings(*v)
		applySettingsUpdate(v, d, u.Experiments)
		if err := v.AgentDefaults.Validate(); err != nil {
			return false, err
		}
		return !reflect.DeepEqual(before, *v), nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, httpapi.WithETag(settingsView(v), settingsETag(ver)), nil
}

// applySettingsUpdate sets in v what the update names: each default given
// (nil keeps it) and each experiment named.
func applySettingsUpdate(v *api.HubSettings, d *api.AgentDefaultsUpdate, experiments map[string]bool) {
	for _, f := range []struct {
		to  *string
		val *string
	}{
		{&v.AgentDefaults.DefaultRuntimeBroker, d.DefaultRuntimeBroker},
		{&v.AgentDefaults.DefaultHarness, d.DefaultHarness},
		{&v.AgentDefaults.DefaultImage, d.DefaultImage},
	} {
		if f.val != nil {
			*f.to = *f.val
		}
	}
	for name, on := range experiments {
		if v.Experiments == nil {
			v.Experiments = map[string]bool{}
		}
		v.Experiments[name] = on
	}
}

// settingsView is the settings as GET and PUT answer them: every known
// experiment named, off or on, so that a reader sees what it can turn
// on.
func settingsView(v api.HubSettings) api.HubSettings {
	v = cloneHubSettings(v)
	if v.Experiments == nil {
		v.Experiments = make(map[string]bool, len(api.Experiments))
	}
	for _, e := range api.Experiments {
		if _, ok := v.Experiments[e]; !ok {
			v.Experiments[e] = false // named, so that the reader sees it exists
		}
	}
	return v
}

func (s *Settings) handleGetLimits(r *http.Request, c *authz.Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.HubRead, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	v, err := s.Limits(r.Context())
	return http.StatusOK, v, err
}

func (s *Settings) handlePutLimits(r *http.Request, c *authz.Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.HubAdmin, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req limitsRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	v, err := req.limits()
	if err != nil {
		return 0, nil, err
	}
	if err := s.save(r.Context(), keyLimits, v, func() { s.limits = &v }); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
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

// save writes a setting and, once it is stored, updates the cached
// copy (cache, run under mu) so readers never see a value the database
// does not hold.
func (s *Settings) save(ctx context.Context, key string, v any, cache func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putLocked(ctx, key, v, cache)
}

// putLocked is save with mu held.
func (s *Settings) putLocked(ctx context.Context, key string, v any, cache func()) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := s.store.PutSetting(ctx, key, b); err != nil {
		return err
	}
	cache()
	return nil
}

// PinDefault, at start, turns a default_runtime_broker stored by name
// (by a Hub older than IDs there) into its broker's ID, and clears one
// that names no broker (a Hub killed between a deregistration and its
// clearing the setting).
func (s *Settings) PinDefault(ctx context.Context) error {
	return s.Update(ctx, func(v *api.HubSettings) (bool, error) {
		ref := v.AgentDefaults.DefaultRuntimeBroker
		if ref == "" {
			return false, nil
		}
		b, err := s.store.GetBroker(ctx, ref)
		switch {
		case errors.Is(err, store.ErrNotFound):
			v.AgentDefaults.DefaultRuntimeBroker = ""
			s.log.Info("cleared the Hub's default_runtime_broker: its broker is no longer registered", "default_runtime_broker", ref)
		case err != nil:
			return false, err
		case b.ID == ref:
			return false, nil
		default:
			v.AgentDefaults.DefaultRuntimeBroker = b.ID
			s.log.Info("the Hub's default_runtime_broker now holds its broker's ID", "broker", b.Name, "broker_id", b.ID)
		}
		return true, nil
	})
}
