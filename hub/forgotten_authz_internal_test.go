package hub

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

// forgottenWorld is two projects: A, owned by member "ma", with an agent
// and ma's access token confined to it, and B, owned by someone else,
// with an agent; written straight into the database, as if they had
// been made through the API.
type forgottenWorld struct {
	s                  *Server
	projectA, projectB *store.Project
	agentA, agentB     *store.Agent
	tokens             map[string]string // caller -> bearer token
}

func newForgottenWorld(t *testing.T) *forgottenWorld {
	t.Helper()
	ctx := context.Background()
	s, st := newInternalServer(t)
	now := time.Now().UTC()
	w := &forgottenWorld{s: s, tokens: map[string]string{}}
	for _, u := range []*store.User{{ID: "ma", Name: "ma", Role: api.RoleMember, CreatedAt: now}, {ID: "mb", Name: "mb", Role: api.RoleMember, CreatedAt: now}} {
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	w.projectA = &store.Project{ID: httpapi.NewID(), Name: "a", SharingMode: api.SharingEmptyPerAgent, CreatedBy: "ma", CreatedAt: now, UpdatedAt: now}
	w.projectB = &store.Project{ID: httpapi.NewID(), Name: "b", SharingMode: api.SharingEmptyPerAgent, CreatedBy: "mb", CreatedAt: now, UpdatedAt: now}
	for _, p := range []*store.Project{w.projectA, w.projectB} {
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	w.agentA = &store.Agent{ID: httpapi.NewID(), Slug: "in-a", ProjectID: w.projectA.ID, Harness: "generic", Phase: api.PhaseRunning,
		Generation: 1, CreatedBy: "user:ma", Delegator: "user:ma", Scopes: []string{"project:agent:create"}, CreatedAt: now, UpdatedAt: now}
	w.agentB = &store.Agent{ID: httpapi.NewID(), Slug: "in-b", ProjectID: w.projectB.ID, Harness: "generic", Phase: api.PhaseRunning,
		Generation: 1, CreatedBy: "user:mb", Delegator: "user:mb", Env: map[string]string{"PLAN": "b's secret plan"}, CreatedAt: now, UpdatedAt: now}
	for _, a := range []*store.Agent{w.agentA, w.agentB} {
		if err := st.CreateAgent(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
	}
	// ma's user access token for A, with every scope a token may carry.
	tok := "scp_forgotten-authorization-test-token" // an access token's prefix (hub/identity)
	sum := sha256.Sum256([]byte(tok))
	scopes := []string{"project:read", "project:update", "project:agent:read", "project:agent:create", "project:agent:lifecycle"}
	t0 := &store.Token{ID: httpapi.NewID(), Hash: sum[:], Kind: store.TokenUser, UserID: "ma", ProjectID: w.projectA.ID, Scopes: scopes, Name: "ci", CreatedAt: now}
	if err := st.CreateToken(ctx, t0); err != nil {
		t.Fatal(err)
	}
	w.tokens["token of project A"] = tok
	w.tokens["agent of project A"] = s.id.MintAgentToken(w.agentA)
	admin, err := s.BootstrapAdmin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.tokens["hub admin"] = admin
	return w
}

// send calls h as an authenticated route would, for the caller of token.
func (w *forgottenWorld) send(token string, h httpapi.Handler) int {
	req := httptest.NewRequest(http.MethodGet, "/forgotten", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	w.s.id.RequireAuth(httpapi.Serve(w.s.log, h))(rec, req)
	return rec.Code
}

// TestForgottenAuthorizationStillHidesAnotherProject: a handler written
// without any authorization call (it never asks hub/authz, it only reads
// the Server's store) run for a caller confined to project A (a user
// access token of A, an agent of A) cannot read project B's agent or
// project by ID: both reads are not found, and the answer is 404. Its
// lists hold nothing of B, and its write of B's agent is refused. The
// same handler reads A's own records, and a hub admin's reads B's, so
// the floor is the caller's, not a blanket refusal.
func TestForgottenAuthorizationStillHidesAnotherProject(t *testing.T) {
	w := newForgottenWorld(t)
	s := w.s
	type reads struct {
		agent   *store.Agent
		project *store.Project
		agentErr, projectErr,
		writeErr error
		listed []*store.Agent
		total  int
		others []*store.Project
	}
	// forgotten reads the agent and the project of target by ID, lists
	// agents of target's project and all projects, and changes the agent:
	// no authorize, no markChecked, no check of its own.
	forgotten := func(target *store.Agent, got *reads) httpapi.Handler {
		return func(r *http.Request, c *Caller) (int, any, error) {
			ctx := r.Context()
			got.agent, got.agentErr = s.store.GetAgent(ctx, target.ID)
			got.project, got.projectErr = s.store.GetProject(ctx, target.ProjectID)
			got.listed, _, got.total, _ = s.store.ListAgents(ctx, store.AgentFilter{ProjectID: target.ProjectID}, store.Page{})
			got.others, _, _, _ = s.store.ListProjects(ctx, store.Page{})
			stolen := *target
			stolen.StatusMessage = "written by a caller of another project"
			got.writeErr = s.store.UpdateAgent(ctx, &stolen)
			if got.agentErr != nil {
				return 0, nil, storeerr.Map(got.agentErr, api.CodeAgentNotFound, "agent")
			}
			if got.projectErr != nil {
				return 0, nil, storeerr.Map(got.projectErr, api.CodeProjectNotFound, "project")
			}
			return http.StatusOK, map[string]any{"agent": got.agent, "project": got.project}, nil
		}
	}
	for _, caller := range []string{"token of project A", "agent of project A"} {
		t.Run(caller, func(t *testing.T) {
			var got reads
			code := w.send(w.tokens[caller], forgotten(w.agentB, &got))
			if !errors.Is(got.agentErr, store.ErrNotFound) || got.agent != nil {
				t.Errorf("reading B's agent by ID: %v, %+v; want not found", got.agentErr, got.agent)
			}
			if !errors.Is(got.projectErr, store.ErrNotFound) || got.project != nil {
				t.Errorf("reading B's project by ID: %v, %+v; want not found", got.projectErr, got.project)
			}
			if code != http.StatusNotFound {
				t.Errorf("answer %d, want 404", code)
			}
			if len(got.listed) != 0 || got.total != 0 {
				t.Errorf("listing B's agents gave %d (total %d), want none", len(got.listed), got.total)
			}
			for _, p := range got.others {
				if p.ID == w.projectB.ID {
					t.Errorf("listing projects gave B")
				}
			}
			if got.writeErr == nil {
				t.Errorf("writing B's agent succeeded")
			}

			// The same handler on A's own agent reads it: the floor is
			// the caller's project, not everything.
			var own reads
			w.send(w.tokens[caller], forgotten(w.agentA, &own))
			if own.agentErr != nil || own.projectErr != nil || own.total != 1 {
				t.Errorf("reading A's own records: %v, %v, %d listed; want them", own.agentErr, own.projectErr, own.total)
			}
		})
	}
	// A hub admin reads every project's records (the guard still refuses
	// its unchecked 200: that is guardWriter's, kept).
	var admin reads
	w.send(w.tokens["hub admin"], forgotten(w.agentB, &admin))
	if admin.agentErr != nil || admin.projectErr != nil || admin.total != 1 {
		t.Errorf("a hub admin reading B's records: %v, %v, %d listed; want them", admin.agentErr, admin.projectErr, admin.total)
	}
}

// TestStoreCallWithoutACallerIs500: a store call whose context carries
// no caller (a handler that built its own context) is refused, default
// deny, and answered 500, not served.
func TestStoreCallWithoutACallerIs500(t *testing.T) {
	w := newForgottenWorld(t)
	var err error
	code := w.send(w.tokens["hub admin"], func(r *http.Request, c *Caller) (int, any, error) {
		httpapi.MarkChecked(r.Context())
		var p *store.Project
		p, err = w.s.store.GetProject(context.Background(), w.projectB.ID)
		return http.StatusOK, p, err
	})
	if err == nil || code != http.StatusInternalServerError {
		t.Fatalf("a store call without a caller: %v, answer %d; want refused, 500", err, code)
	}
}
