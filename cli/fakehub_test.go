package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
)

// fakeHub mimics the Hub's routes (api/routes.go) in memory, enough for the
// CLI's unit tests. It records every request it serves.
type fakeHub struct {
	*httptest.Server
	token string // required bearer; "" accepts any caller

	mu       sync.Mutex
	reqs     []fakeReq
	projects []*api.Project // in creation order
	brokers  []*api.RuntimeBroker
	agents   []*api.Agent
	settings api.HubSettings
	limits   api.Limits
	seq      int
	// createErr, when set, is the answer to every agent create.
	createErr *api.Error
}

type fakeReq struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

func newFakeHub(t *testing.T, token string) *fakeHub {
	t.Helper()
	h := &fakeHub{token: token, limits: api.Limits{MaxAgentsPerBroker: api.DefaultMaxAgentsPerBroker}}
	m := http.NewServeMux()
	a := func(pattern string, fn func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error), needAuth bool) {
		m.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			rec := fakeReq{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization")}
			_ = json.Unmarshal(b, &rec.Body)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.reqs = append(h.reqs, rec)
			if needAuth && h.token != "" && rec.Auth != "Bearer "+h.token {
				writeFake(w, nil, 0, api.Unauthorized("bad or missing token"))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			v, status, e := fn(w, r)
			writeFake(w, v, status, e)
		})
	}
	a("GET /api/v1/auth/whoami", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		return api.Whoami{Kind: "user", ID: "u-1", Name: "alice", Role: api.RoleAdmin}, 200, nil
	}, true)
	h.projectRoutes(a)
	h.brokerRoutes(a)
	h.agentRoutes(a)
	a("GET /api/v1/settings", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) { return h.settings, 200, nil }, true)
	a("PUT /api/v1/settings", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		if e := decodeFake(r, &h.settings); e != nil {
			return nil, 0, e
		}
		return h.settings, 200, nil
	}, true)
	a("GET /api/v1/admin/limits", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) { return h.limits, 200, nil }, true)
	a("PUT /api/v1/admin/limits", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		if e := decodeFake(r, &h.limits); e != nil {
			return nil, 0, e
		}
		return h.limits, 200, nil
	}, true)
	h.Server = httptest.NewServer(m)
	t.Cleanup(h.Close)
	return h
}

type fakeRoute = func(pattern string, fn func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error), needAuth bool)

func writeFake(w http.ResponseWriter, v any, status int, e *api.Error) {
	w.Header().Set("Content-Type", "application/json")
	if e != nil {
		w.WriteHeader(e.Status)
		json.NewEncoder(w).Encode(api.ErrorBody{Error: e})
		return
	}
	if status == 0 { // the handler wrote the response itself
		return
	}
	w.WriteHeader(status)
	if v != nil {
		json.NewEncoder(w).Encode(v)
	}
}

func decodeFake(r *http.Request, v any) *api.Error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return api.BadRequest("bad body: %v", err)
	}
	return nil
}

func (h *fakeHub) id(prefix string) string {
	h.seq++
	return prefix + "-" + strconv.Itoa(h.seq)
}

// requests returns the recorded requests whose method and path match.
func (h *fakeHub) requests(method, path string) []fakeReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []fakeReq
	for _, r := range h.reqs {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (h *fakeHub) requestCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reqs)
}

// page serves items in pages of ?limit= (default 2, to exercise the
// client's cursor following) with the index as the cursor.
func page[T any](r *http.Request, items []T) api.List[T] {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 2 {
		limit = 2
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	l := api.List[T]{Items: []T{}, Total: len(items)}
	for i := start; i < len(items) && i < start+limit; i++ {
		l.Items = append(l.Items, items[i])
	}
	if start+limit < len(items) {
		l.NextCursor = strconv.Itoa(start + limit)
	}
	return l
}

func (h *fakeHub) projectRoutes(a fakeRoute) {
	a("POST /api/v1/projects", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		var req api.CreateProjectRequest
		if e := decodeFake(r, &req); e != nil {
			return nil, 0, e
		}
		if h.project(req.Name) != nil {
			return nil, 0, api.Conflict(api.CodeAlreadyExists, "project %q exists", req.Name)
		}
		p := &api.Project{ID: h.id("p"), Name: req.Name, GitRemote: req.GitRemote, SharingMode: req.SharingMode,
			DefaultBrokerID: req.DefaultBroker, ActiveProfile: req.ActiveProfile, Providers: []string{}, CreatedAt: time.Now()}
		h.projects = append(h.projects, p)
		return p, 201, nil
	}, true)
	a("GET /api/v1/projects", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		var ps []api.Project
		for _, p := range h.projects {
			ps = append(ps, *p)
		}
		return page(r, ps), 200, nil
	}, true)
	a("GET /api/v1/projects/{project}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		if p := h.project(r.PathValue("project")); p != nil {
			return p, 200, nil
		}
		return nil, 0, api.NotFound(api.CodeProjectNotFound, "project %q not found", r.PathValue("project"))
	}, true)
	a("PATCH /api/v1/projects/{project}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		p := h.project(r.PathValue("project"))
		if p == nil {
			return nil, 0, api.NotFound(api.CodeProjectNotFound, "project %q not found", r.PathValue("project"))
		}
		var req api.UpdateProjectRequest
		if e := decodeFake(r, &req); e != nil {
			return nil, 0, e
		}
		for dst, src := range map[*string]*string{&p.GitRemote: req.GitRemote, &p.SharingMode: req.SharingMode,
			&p.DefaultBrokerID: req.DefaultBroker, &p.ActiveProfile: req.ActiveProfile} {
			if src != nil {
				*dst = *src
			}
		}
		return p, 200, nil
	}, true)
	a("DELETE /api/v1/projects/{project}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		// What a Hub with one Kubernetes broker online and one offline answers.
		return api.ProjectDeleted{ID: "p-1", Name: r.PathValue("project"),
			Removed: []api.ProjectResource{{Broker: "k8s", BrokerID: "b-1", Resource: "agents/scion-project-abc-workspace"}},
			Queued:  []api.ProjectResource{{Broker: "k8s-2", BrokerID: "b-2", Reason: "runtime broker \"k8s-2\" is offline; the cleanup is queued"}},
			Left:    []api.ProjectResource{{Broker: "k8s-3", BrokerID: "b-3", Reason: "project cleanup failed: forbidden"}}}, 200, nil
	}, true)
}

func (h *fakeHub) project(ref string) *api.Project {
	for _, p := range h.projects {
		if p.ID == ref || p.Name == ref {
			return p
		}
	}
	return nil
}

func (h *fakeHub) broker(ref string) *api.RuntimeBroker {
	for _, b := range h.brokers {
		if b.ID == ref || b.Name == ref {
			return b
		}
	}
	return nil
}

// addBroker registers a broker directly, as if another machine had.
func (h *fakeHub) addBroker(name, status string, running, limit int) *api.RuntimeBroker {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := time.Now().Add(-time.Minute)
	b := &api.RuntimeBroker{ID: h.id("b"), Name: name, Status: status, Capabilities: []string{"agent-move"},
		Projects: []string{}, RunningAgents: running, EffectiveMaxAgents: limit, LastSeen: &seen, CreatedAt: time.Now()}
	h.brokers = append(h.brokers, b)
	return b
}

func (h *fakeHub) brokerRoutes(a fakeRoute) {
	register := func(name string, autoProvide bool) *api.BrokerCredentials {
		b := &api.RuntimeBroker{ID: h.id("b"), Name: name, Status: api.BrokerOffline, Capabilities: []string{},
			Projects: []string{}, AutoProvide: autoProvide, EffectiveMaxAgents: h.limits.MaxAgentsPerBroker, CreatedAt: time.Now()}
		h.brokers = append(h.brokers, b)
		return &api.BrokerCredentials{BrokerID: b.ID, Name: name, Secret: "secret-" + b.ID, HubURL: h.URL}
	}
	a("POST /api/v1/runtime-brokers", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		var req api.RegisterBrokerRequest
		if e := decodeFake(r, &req); e != nil {
			return nil, 0, e
		}
		return register(req.Name, req.AutoProvide), 201, nil
	}, true)
	a("POST /api/v1/runtime-brokers/join", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		var req api.RegisterBrokerRequest
		if e := decodeFake(r, &req); e != nil {
			return nil, 0, e
		}
		switch req.JoinToken {
		case "jt-good":
			return register(req.Name, false), 201, nil
		case "jt-named": // made with join-token create --name gpu-box
			return register("gpu-box", false), 201, nil
		}
		return nil, 0, api.Unauthorized("invalid join token")
	}, false)
	a("POST /api/v1/runtime-brokers/join-tokens", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		var req api.CreateJoinTokenRequest
		if e := decodeFake(r, &req); e != nil {
			return nil, 0, e
		}
		return api.JoinToken{Token: "jt-new", Name: req.Name, ExpiresAt: time.Now().Add(time.Hour)}, 201, nil
	}, true)
	a("GET /api/v1/runtime-brokers", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		var bs []api.RuntimeBroker
		for _, b := range h.brokers {
			bs = append(bs, *b)
		}
		return page(r, bs), 200, nil
	}, true)
	notFound := func(r *http.Request) *api.Error {
		return api.NotFound(api.CodeBrokerNotFound, "runtime broker %q not found", r.PathValue("broker"))
	}
	a("GET /api/v1/runtime-brokers/{broker}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		if b := h.broker(r.PathValue("broker")); b != nil {
			return b, 200, nil
		}
		return nil, 0, notFound(r)
	}, true)
	a("DELETE /api/v1/runtime-brokers/{broker}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		for i, b := range h.brokers {
			if b.ID == r.PathValue("broker") || b.Name == r.PathValue("broker") {
				// As the Hub: refused while agents remain, unless forced.
				var names []string
				for _, ag := range h.agents {
					if ag.BrokerID == b.ID {
						names = append(names, ag.ProjectID+"/"+ag.Slug)
					}
				}
				if len(names) > 0 && r.URL.Query().Get("force") != "true" {
					return nil, 0, api.Conflict(api.CodeBrokerHasAgents, "runtime broker %q still has %d agent(s)", b.Name, len(names)).
						WithDetail("agents", names).WithDetail("total", len(names))
				}
				h.brokers = append(h.brokers[:i], h.brokers[i+1:]...)
				return nil, 204, nil
			}
		}
		return nil, 0, notFound(r)
	}, true)
	provider := func(add bool) func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		return func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
			b := h.broker(r.PathValue("broker"))
			if b == nil {
				return nil, 0, notFound(r)
			}
			p := h.project(r.PathValue("project"))
			if p == nil {
				return nil, 0, api.NotFound(api.CodeProjectNotFound, "project %q not found", r.PathValue("project"))
			}
			b.Projects = removeString(b.Projects, p.ID)
			p.Providers = removeString(p.Providers, b.ID)
			if add {
				b.Projects = append(b.Projects, p.ID)
				p.Providers = append(p.Providers, b.ID)
			}
			return b, 200, nil
		}
	}
	a("PUT /api/v1/runtime-brokers/{broker}/projects/{project}", provider(true), true)
	a("DELETE /api/v1/runtime-brokers/{broker}/projects/{project}", provider(false), true)
}

func removeString(ss []string, s string) []string {
	out := []string{}
	for _, x := range ss {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func (h *fakeHub) agent(ref, project string) *api.Agent {
	p := h.project(project)
	for _, a := range h.agents {
		if a.ID == ref || (p != nil && a.Slug == ref && a.ProjectID == p.ID) {
			return a
		}
	}
	return nil
}

func (h *fakeHub) agentRoutes(a fakeRoute) {
	a("POST /api/v1/agents", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		var req api.CreateAgentRequest
		if e := decodeFake(r, &req); e != nil {
			return nil, 0, e
		}
		if h.createErr != nil {
			return nil, 0, h.createErr
		}
		p := h.project(req.Project)
		if p == nil {
			return nil, 0, api.NotFound(api.CodeProjectNotFound, "project %q not found", req.Project)
		}
		if h.agent(req.Name, req.Project) != nil {
			return nil, 0, api.Conflict(api.CodeAlreadyExists, "agent %q exists", req.Name)
		}
		ag := &api.Agent{ID: h.id("a"), Slug: req.Name, ProjectID: p.ID, BrokerName: req.Broker, Harness: "generic",
			Image: req.Image, Command: req.Command, Env: req.Env, Phase: api.PhaseCreated, CreatedAt: time.Now()}
		if req.Start {
			ag.Phase, ag.ContainerStatus = api.PhaseRunning, api.ContainerRunning
		}
		h.agents = append(h.agents, ag)
		return ag, 201, nil
	}, true)
	a("GET /api/v1/agents", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		q := r.URL.Query()
		var out []api.Agent
		for _, ag := range h.agents {
			if pr := q.Get("project"); pr != "" && (h.project(pr) == nil || h.project(pr).ID != ag.ProjectID) {
				continue
			}
			if b := q.Get("broker"); b != "" && ag.BrokerName != b {
				continue
			}
			out = append(out, *ag)
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
		return page(r, out), 200, nil
	}, true)
	notFound := func(r *http.Request) *api.Error {
		return api.NotFound(api.CodeAgentNotFound, "agent %q not found", r.PathValue("agent"))
	}
	a("GET /api/v1/agents/{agent}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		if ag := h.agent(r.PathValue("agent"), r.URL.Query().Get("project")); ag != nil {
			return ag, 200, nil
		}
		return nil, 0, notFound(r)
	}, true)
	a("DELETE /api/v1/agents/{agent}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		if ag := h.agent(r.PathValue("agent"), r.URL.Query().Get("project")); ag != nil {
			ag.Phase = api.PhaseDeleting
			return nil, 204, nil
		}
		return nil, 0, notFound(r)
	}, true)
	a("POST /api/v1/agents/{agent}/{action}", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		ag := h.agent(r.PathValue("agent"), r.URL.Query().Get("project"))
		if ag == nil {
			return nil, 0, notFound(r)
		}
		phase := map[string]string{"start": api.PhaseRunning, "restart": api.PhaseRunning, "resume": api.PhaseRunning,
			"stop": api.PhaseStopped, "suspend": api.PhaseSuspended}[r.PathValue("action")]
		if phase == "" {
			return nil, 0, api.NotFound(api.CodeNotFound, "no action %q", r.PathValue("action"))
		}
		ag.Phase = phase
		return ag, 200, nil
	}, true)
	a("GET /api/v1/agents/{agent}/logs", func(w http.ResponseWriter, r *http.Request) (any, int, *api.Error) {
		if h.agent(r.PathValue("agent"), r.URL.Query().Get("project")) == nil {
			return nil, 0, notFound(r)
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "log of %s (follow=%s tail=%s)\n", r.PathValue("agent"), r.URL.Query().Get("follow"), r.URL.Query().Get("tail"))
		return nil, 0, nil
	}, true)
}
