package hub_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// The caller kinds of the authorization matrix, in column order.
var matrixCallers = []string{
	"admin", "member", "viewer",
	"token", "token:project:read", "token:project:update", "token:project:agent:read",
	"token:project:agent:create", "token:project:agent:lifecycle",
	"agent:self", "agent:other+create", "agent:other",
}

// A matrix row: a route (its pattern exactly as in hub.Routes, plus an
// optional variant after " | ") and the expected status per caller.
type matrixRow struct {
	route  string
	expect string // one status per caller, in matrixCallers order
}

// The expected answer of every route for every kind of caller. The
// project P is owned by the member; broker b1 serves P; b2 serves P and
// has AutoProvide on; the target agent T was started in P by the member.
// Every cell gets fresh targets, so the cells do not depend on each other.
var matrix = []matrixRow{
	{"GET /healthz", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"GET /readyz", "200 200 200 200 200 200 200 200 200 200 200 200"},
	// The metrics name clusters only some profiles offer: a scrape token
	// (metrics_auth_test.go) or a Hub admin only.
	{"GET /metrics", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/auth/whoami", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"POST /api/v1/auth/agent-token", "403 403 403 403 403 403 403 403 403 200 200 200"},

	{"POST /api/v1/projects", "201 201 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/projects", "200 200 200 403 200 200 200 200 200 200 200 200"},
	{"GET /api/v1/projects/{project}", "200 200 200 403 200 200 200 200 200 200 200 200"},
	{"GET /api/v1/projects/{project} | another project", "200 200 200 404 404 404 404 404 404 404 404 404"},
	{"PATCH /api/v1/projects/{project}", "200 200 403 403 403 200 403 403 403 403 403 403"},
	{"PATCH /api/v1/projects/{project} | not the member's", "200 403 403 404 404 404 404 404 404 404 404 404"},
	{"DELETE /api/v1/projects/{project}", "200 200 403 404 404 404 404 404 404 404 404 404"},

	{"POST /api/v1/runtime-brokers", "201 201 403 403 403 403 403 403 403 403 403 403"},
	{"POST /api/v1/runtime-brokers/join", "401 401 401 401 401 401 401 401 401 401 401 401"},
	{"POST /api/v1/runtime-brokers/join-tokens", "201 403 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/runtime-brokers", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"GET /api/v1/runtime-brokers/connect", "401 401 401 401 401 401 401 401 401 401 401 401"},
	{"GET /api/v1/runtime-brokers/{broker}", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"GET /api/v1/runtime-brokers/{broker} | outside the project", "200 200 200 404 404 404 404 404 404 404 404 404"},
	{"PATCH /api/v1/runtime-brokers/{broker}", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"PATCH /api/v1/runtime-brokers/{broker} | registered by the member", "200 200 403 404 404 404 404 404 404 404 404 404"},
	{"DELETE /api/v1/runtime-brokers/{broker}", "204 204 403 404 404 404 404 404 404 404 404 404"},
	{"PUT /api/v1/runtime-brokers/{broker}/projects/{project}", "200 200 403 403 403 404 403 403 403 403 403 403"},
	{"PUT /api/v1/runtime-brokers/{broker}/projects/{project} | AutoProvide broker", "200 200 403 403 403 200 403 403 403 403 403 403"},
	{"DELETE /api/v1/runtime-brokers/{broker}/projects/{project}", "200 200 403 403 403 200 403 403 403 403 403 403"},

	{"POST /api/v1/agents", "201 201 403 403 403 403 403 403 403 201 201 403"},
	{"POST /api/v1/agents | AutoProvide broker", "201 201 403 403 403 403 403 201 403 201 201 403"},
	{"POST /api/v1/agents | coordinator role", "201 403 403 403 403 403 403 403 403 403 403 403"},
	// Naming a secret hands its value to the new agent (authz.SecretUse):
	// a project secret needs its project's owner or an admin; a hub-wide
	// one any agent creator; an agent (agent:self holds the secret, the
	// others do not) hands on only what it was given.
	{"POST /api/v1/agents | naming a project secret", "201 201 403 403 403 403 403 201 403 201 403 403"},
	{"POST /api/v1/agents | naming a secret of a project the member does not own", "201 403 403 404 404 404 404 404 404 404 404 404"},
	{"POST /api/v1/agents | naming a hub-wide secret", "201 201 403 403 403 403 403 201 403 201 403 403"},
	// Level 2 of the cascade: a project default that does not provide for
	// the project is linked only for a caller with update access to it
	// (tokens are made for that project; the agents live in P).
	{"POST /api/v1/agents | project default not a provider", "201 201 403 403 403 403 403 403 403 404 404 404"},
	{"POST /api/v1/agents | project default not a provider, not the member's", "201 403 403 403 403 403 403 403 403 404 404 404"},
	{"GET /api/v1/agents", "200 200 200 403 403 403 200 200 200 200 200 200"},
	{"GET /api/v1/agents/{agent}", "200 200 200 403 403 403 200 200 200 200 200 200"},
	{"GET /api/v1/agents/{agent}/moves", "200 200 200 403 403 403 200 200 200 200 200 200"},
	{"PATCH /api/v1/agents/{agent}", "200 200 403 403 403 403 403 403 200 200 403 403"},
	{"PATCH /api/v1/agents/{agent} | to coordinator", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"DELETE /api/v1/agents/{agent}", "204 204 403 403 403 403 403 403 204 204 403 403"},
	{"POST /api/v1/agents/{agent}/{action}", "200 200 403 403 403 403 403 403 200 200 403 403"},
	{"POST /api/v1/agents/{agent}/{action} | restart a coordinator", "200 403 403 403 403 403 403 403 403 200 403 403"},
	// A move's dry run (forced: the matrix brokers keep workspaces on
	// their own disks) to b2, which serves P with AutoProvide on: the
	// agent.lifecycle of the action routes, then the spec's move table
	// (the agent itself needs no permission; a token reaches AutoProvide
	// brokers). Unforced, the export check refuses (409) whoever may ask.
	{"POST /api/v1/agents/{agent}/reincarnate", "200 200 403 403 403 403 403 403 200 200 403 403"},
	{"POST /api/v1/agents/{agent}/reincarnate | not forced", "409 409 403 403 403 403 403 403 409 409 403 403"},
	{"POST /api/v1/agents/{agent}/reincarnate | a coordinator", "200 403 403 403 403 403 403 403 403 200 403 403"},
	{"GET /api/v1/agents/{agent}/logs", "200 200 200 403 403 403 200 200 200 200 200 200"},
	{"POST /api/v1/agents/{agent}/exec", "200 200 403 403 403 403 403 403 200 200 403 403"},
	{"GET /api/v1/agents/{agent}/attach", "426 426 403 403 403 403 403 403 426 426 403 403"},
	// Delegated Jobs: agent.lifecycle on the Job's agent. The brokers of
	// the matrix do not run Jobs, so an allowed run is 501 (nothing is
	// written). A Job the caller cannot reach is 404, like an unknown one.
	{"POST /api/v1/agents/{agent}/jobs", "501 501 403 403 403 403 403 403 501 501 403 403"},
	{"GET /api/v1/agents/{agent}/jobs", "200 200 403 403 403 403 403 403 200 200 403 403"},
	{"GET /api/v1/jobs", "200 200 403 403 403 403 403 403 200 403 403 403"},
	{"GET /api/v1/jobs | no filter", "200 403 403 403 403 403 403 403 403 200 200 200"},
	{"GET /api/v1/jobs/{job}", "200 200 404 404 404 404 404 404 200 200 404 404"},
	{"GET /api/v1/jobs/{job}/logs", "200 200 404 404 404 404 404 404 200 200 404 404"},
	{"GET /api/v1/jobs/{job}/trace", "200 200 404 404 404 404 404 404 200 200 404 404"},
	{"POST /api/v1/jobs/{job}/cancel", "200 200 404 404 404 404 404 404 200 200 404 404"},

	{"POST /api/v1/auth/device", "501 501 501 501 501 501 501 501 501 501 501 501"},
	{"POST /api/v1/auth/device/token", "501 501 501 501 501 501 501 501 501 501 501 501"},
	{"GET /api/v1/users", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"PATCH /api/v1/users/{user}", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"POST /api/v1/auth/tokens", "201 201 201 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/auth/tokens", "200 200 200 403 403 403 403 403 403 403 403 403"},
	{"DELETE /api/v1/auth/tokens/{id}", "204 204 404 403 403 403 403 403 403 403 403 403"},

	{"PUT /api/v1/secrets/{name}", "200 200 403 403 403 200 403 403 403 403 403 403"},
	{"PUT /api/v1/secrets/{name} | hub-wide", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/secrets", "200 200 200 403 200 200 200 200 200 403 403 403"},
	{"DELETE /api/v1/secrets/{name}", "204 204 403 403 403 204 403 403 403 403 403 403"},
	// Broker-scoped secrets: hub admins only; the value route takes no
	// bearer token at all (only that broker's signed headers).
	{"PUT /api/v1/runtime-brokers/{broker}/secrets/{name}", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/runtime-brokers/{broker}/secrets", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"DELETE /api/v1/runtime-brokers/{broker}/secrets/{name}", "204 403 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/runtime-brokers/{broker}/secrets/{name}/value", "401 401 401 401 401 401 401 401 401 401 401 401"},

	// The web page: each view answers as the API read it shows (the
	// overview as GET /api/v1/agents, an agent's page and its logs as
	// theirs); the live feed to any caller, each record in it read as
	// that caller. Sign-in, sign-out and the static files are public: a
	// sign-in without a token is 400, a sign-out lands on the sign-in
	// page, the static directory is not listed.
	{"GET /ui/{$}", "200 200 200 403 403 403 200 200 200 200 200 200"},
	{"GET /ui/agents/{agent}", "200 200 200 403 403 403 200 200 200 200 200 200"},
	{"GET /ui/agents/{agent}/logs", "200 200 200 403 403 403 200 200 200 200 200 200"},
	{"GET /ui/events", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"GET /api/v1/events", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"GET /ui/login", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"POST /ui/login", "400 400 400 400 400 400 400 400 400 400 400 400"},
	{"POST /ui/logout", "200 200 200 200 200 200 200 200 200 200 200 200"},
	{"GET /ui/static/", "404 404 404 404 404 404 404 404 404 404 404 404"},

	{"GET /api/v1/settings", "200 200 200 403 403 403 403 403 403 403 403 403"},
	{"PUT /api/v1/settings", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/admin/limits", "200 200 200 403 403 403 403 403 403 403 403 403"},
	{"PUT /api/v1/admin/limits", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"POST /api/v1/admin/metrics-tokens", "201 403 403 403 403 403 403 403 403 403 403 403"},
	{"GET /api/v1/admin/metrics-tokens", "200 403 403 403 403 403 403 403 403 403 403 403"},
	{"DELETE /api/v1/admin/metrics-tokens/{id}", "204 403 403 403 403 403 403 403 403 403 403 403"},
}

// matrixEnv is the world the matrix runs in.
type matrixEnv struct {
	t       *testing.T
	e       *testenv.Env
	ctx     context.Context
	tokens  map[string]string // caller -> bearer token (fixed callers)
	member  *client.Client
	project string // P, owned by the member
	// other is Q, owned by the admin, served by b2; its secret and P's
	// and the hub-wide one are the secrets the secret rows name.
	other                              string
	projectSecret, otherSecret, hubSec string
	seq                                int
}

func (m *matrixEnv) name(prefix string) string {
	m.seq++
	return fmt.Sprintf("%s-%d", prefix, m.seq)
}

// userToken makes a user and a bearer token for it (what sign-in gives).
func userToken(t *testing.T, st store.Store, id, role string, projectID string, scopes []string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := st.GetUser(ctx, id); err != nil {
		if err := st.CreateUser(ctx, &store.User{ID: id, Name: id, Role: role, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "scu_" + hex.EncodeToString(b)
	if projectID != "" {
		tok = "scp_" + hex.EncodeToString(b)
	}
	sum := sha256.Sum256([]byte(tok))
	if err := st.CreateToken(ctx, &store.Token{ID: id + "-" + hex.EncodeToString(b[:4]), Hash: sum[:], Kind: store.TokenUser,
		UserID: id, ProjectID: projectID, Scopes: scopes, Name: "t", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	return tok
}

// agentToken reads an agent's own token, as its container sees it.
func agentToken(t *testing.T, e *testenv.Env, agentID string) string {
	t.Helper()
	var out bytes.Buffer
	if _, err := e.Admin.Exec(context.Background(), agentID, "", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatalf("read agent token: %v", err)
	}
	return strings.TrimSpace(out.String())
}

func (m *matrixEnv) startAgent(c *client.Client, req api.CreateAgentRequest) *api.Agent {
	m.t.Helper()
	if req.Name == "" {
		req.Name = m.name("t")
	}
	req.Project, req.Broker, req.Start = m.project, "b1", true
	req.Command = []string{"x"}
	a, err := c.CreateAgent(m.ctx, req)
	if err != nil {
		m.t.Fatalf("start agent: %v", err)
	}
	return a
}

func newMatrixEnv(t *testing.T) *matrixEnv {
	moves := []string{wire.CapAgentMove, wire.CapAgentMoveRecreate}
	e := testenv.New(t, testenv.Options{Brokers: 2, Capabilities: map[string][]string{"b1": moves, "b2": moves}})
	ctx := context.Background()
	m := &matrixEnv{t: t, e: e, ctx: ctx, tokens: map[string]string{}}
	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 0}); err != nil {
		t.Fatal(err)
	}
	m.tokens["admin"] = e.AdminToken
	m.tokens["member"] = userToken(t, e.Store, "mem", api.RoleMember, "", nil)
	m.tokens["viewer"] = userToken(t, e.Store, "vie", api.RoleViewer, "", nil)
	m.member = client.New(e.URL, m.tokens["member"])
	p, err := m.member.CreateProject(ctx, api.CreateProjectRequest{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	m.project = p.ID
	for _, b := range []string{"b1", "b2"} {
		if _, err := e.Admin.ProvideProject(ctx, b, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Admin.UpdateBroker(ctx, "b2", api.UpdateBrokerRequest{AutoProvide: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	m.tokens["token"] = userToken(t, e.Store, "mem", api.RoleMember, p.ID, nil)
	for _, sc := range []string{"project:read", "project:update", "project:agent:read", "project:agent:create", "project:agent:lifecycle"} {
		m.tokens["token:"+sc] = userToken(t, e.Store, "mem", api.RoleMember, p.ID, []string{sc})
	}
	q, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	m.other = q.ID
	if _, err := e.Admin.ProvideProject(ctx, "b2", q.ID); err != nil {
		t.Fatal(err)
	}
	m.projectSecret, m.otherSecret, m.hubSec = "P_SECRET", "Q_SECRET", "HUB_SECRET"
	for _, x := range []struct {
		c            *client.Client
		project, key string
	}{{m.member, p.ID, m.projectSecret}, {e.Admin, q.ID, m.otherSecret}, {e.Admin, "", m.hubSec}} {
		if _, err := x.c.PutSecret(ctx, x.project, x.key, "v-"+x.key); err != nil {
			t.Fatal(err)
		}
	}
	withScope := m.startAgent(m.member, api.CreateAgentRequest{Name: "other-create"})
	noScope := m.startAgent(m.member, api.CreateAgentRequest{Name: "other", Scopes: &[]string{}})
	m.tokens["agent:other+create"] = agentToken(t, e, withScope.ID)
	m.tokens["agent:other"] = agentToken(t, e, noScope.ID)
	return m
}

// cell is one request to send.
type cell struct {
	method, path string
	body         any
}

// prepare builds the request of one cell, with fresh targets. For the
// agent:self column the target agent is the caller itself.
func (m *matrixEnv) prepare(route, caller string) (cell, string) {
	t, ctx, e := m.t, m.ctx, m.e
	pattern, variant, _ := strings.Cut(route, " | ")
	method, path, _ := strings.Cut(pattern, " ")
	token := m.tokens[caller]
	target := func(req api.CreateAgentRequest) string {
		a := m.startAgent(m.member, req)
		if caller == "agent:self" {
			token = agentToken(t, e, a.ID)
		}
		return a.ID
	}
	if caller == "agent:self" && !strings.Contains(path, "{agent}") {
		// In the secret rows, agent:self was given the secret it names.
		self := api.CreateAgentRequest{}
		switch variant {
		case "naming a project secret":
			self.Secrets = []string{m.projectSecret}
		case "naming a hub-wide secret":
			self.Secrets = []string{m.hubSec}
		}
		token = agentToken(t, e, m.startAgent(m.member, self).ID)
	}
	vars := map[string]string{} // the last value set wins
	set := func(k, v string) { vars[k] = v }
	c := cell{method: method}
	switch pattern {
	case "POST /api/v1/projects":
		c.body = api.CreateProjectRequest{Name: m.name("proj")}
	case "GET /api/v1/projects/{project}", "PATCH /api/v1/projects/{project}":
		set("project", m.project)
		if variant != "" {
			p, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: m.name("other")})
			if err != nil {
				t.Fatal(err)
			}
			set("project", p.ID)
		}
		c.body = api.UpdateProjectRequest{ActiveProfile: ptr("")}
	case "DELETE /api/v1/projects/{project}":
		p, err := m.member.CreateProject(ctx, api.CreateProjectRequest{Name: m.name("gone")})
		if err != nil {
			t.Fatal(err)
		}
		set("project", p.ID)
	case "POST /api/v1/runtime-brokers":
		c.body = api.RegisterBrokerRequest{Name: m.name("reg")}
	case "POST /api/v1/runtime-brokers/join":
		c.body = api.RegisterBrokerRequest{Name: m.name("j"), JoinToken: "scj_not-a-token"}
	case "POST /api/v1/runtime-brokers/join-tokens":
		c.body = api.CreateJoinTokenRequest{Name: "j"}
	case "GET /api/v1/runtime-brokers/{broker}", "PATCH /api/v1/runtime-brokers/{broker}":
		set("broker", "b1")
		switch variant {
		case "outside the project":
			creds, err := e.Admin.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: m.name("far")})
			if err != nil {
				t.Fatal(err)
			}
			set("broker", creds.BrokerID)
		case "registered by the member":
			creds, err := m.member.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: m.name("mine")})
			if err != nil {
				t.Fatal(err)
			}
			set("broker", creds.BrokerID)
		}
		c.body = api.UpdateBrokerRequest{AutoProvide: ptr(false)}
		if variant == "" {
			c.body = api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: ptr(0)}}
		}
	case "DELETE /api/v1/runtime-brokers/{broker}":
		creds, err := m.member.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: m.name("dereg")})
		if err != nil {
			t.Fatal(err)
		}
		set("broker", creds.BrokerID)
	case "PUT /api/v1/runtime-brokers/{broker}/projects/{project}", "DELETE /api/v1/runtime-brokers/{broker}/projects/{project}":
		creds, err := e.Admin.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: m.name("link"), AutoProvide: variant != ""})
		if err != nil {
			t.Fatal(err)
		}
		if method == http.MethodDelete {
			if _, err := e.Admin.ProvideProject(ctx, creds.BrokerID, m.project); err != nil {
				t.Fatal(err)
			}
		}
		set("broker", creds.BrokerID)
		set("project", m.project)
	case "POST /api/v1/agents":
		req := api.CreateAgentRequest{Name: m.name("new"), Project: m.project, Broker: "b1", Start: true, Command: []string{"x"}}
		switch variant {
		case "AutoProvide broker":
			req.Broker = "b2"
		case "coordinator role":
			req.Role = "coordinator"
		case "naming a project secret":
			req.Broker, req.Secrets = "b2", []string{m.projectSecret}
		case "naming a secret of a project the member does not own":
			req.Project, req.Broker, req.Secrets = m.other, "b2", []string{m.otherSecret}
		case "naming a hub-wide secret":
			req.Broker, req.Secrets = "b2", []string{m.hubSec}
		case "project default not a provider", "project default not a provider, not the member's":
			// A fresh project whose default broker, b2 (AutoProvide, so
			// every caller sees it), does not provide for it; the tokens
			// are the callers' own, made for that project.
			owner := m.member
			if variant != "project default not a provider" {
				owner = e.Admin
			}
			p, err := owner.CreateProject(ctx, api.CreateProjectRequest{Name: m.name("dflt"), DefaultBroker: "b2"})
			if err != nil {
				t.Fatal(err)
			}
			req.Project, req.Broker = p.ID, ""
			if scope, ok := strings.CutPrefix(caller, "token"); ok {
				var scopes []string
				if scope != "" {
					scopes = []string{strings.TrimPrefix(scope, ":")}
				}
				token = userToken(t, e.Store, "mem", api.RoleMember, p.ID, scopes)
			}
		}
		c.body = req
	case "GET /api/v1/agents":
		path += "?project=" + m.project
	case "POST /api/v1/agents/{agent}/{action}":
		set("action", "stop")
		req := api.CreateAgentRequest{}
		if variant != "" {
			set("action", "restart")
			a := m.startAgent(e.Admin, api.CreateAgentRequest{Role: "coordinator"})
			set("agent", a.ID)
			if caller == "agent:self" {
				token = agentToken(t, e, a.ID)
			}
			break
		}
		set("agent", target(req))
	case "POST /api/v1/agents/{agent}/reincarnate":
		req := api.ReincarnateRequest{Broker: "b2", DryRun: true, Force: variant != "not forced"}
		c.body = req
		if variant == "a coordinator" {
			a := m.startAgent(e.Admin, api.CreateAgentRequest{Role: "coordinator"})
			set("agent", a.ID)
			if caller == "agent:self" {
				token = agentToken(t, e, a.ID)
			}
			break
		}
		set("agent", target(api.CreateAgentRequest{}))
	case "POST /api/v1/agents/{agent}/exec":
		set("agent", target(api.CreateAgentRequest{}))
		c.body = api.ExecRequest{Command: []string{"true"}}
	case "PATCH /api/v1/agents/{agent}":
		set("agent", target(api.CreateAgentRequest{}))
		c.body = api.UpdateAgentRequest{Role: ptr("worker")}
		if variant != "" {
			c.body = api.UpdateAgentRequest{Role: ptr("coordinator")}
		}
	case "GET /ui/{$}":
		path = "/ui/"
	case "GET /ui/agents/{agent}", "GET /ui/agents/{agent}/logs":
		set("agent", target(api.CreateAgentRequest{}))
	case "GET /api/v1/agents/{agent}", "DELETE /api/v1/agents/{agent}", "GET /api/v1/agents/{agent}/logs", "GET /api/v1/agents/{agent}/attach",
		"GET /api/v1/agents/{agent}/moves":
		set("agent", target(api.CreateAgentRequest{}))
	case "POST /api/v1/agents/{agent}/jobs":
		set("agent", target(api.CreateAgentRequest{}))
		c.body = api.JobRunRequest{Image: "busybox", Command: []string{"true"}}
	case "GET /api/v1/agents/{agent}/jobs":
		set("agent", target(api.CreateAgentRequest{}))
	case "GET /api/v1/jobs":
		if variant == "" {
			path += "?project=" + m.project
		}
	case "GET /api/v1/jobs/{job}", "GET /api/v1/jobs/{job}/logs", "GET /api/v1/jobs/{job}/trace", "POST /api/v1/jobs/{job}/cancel":
		// A cancelled Job: its cancel is answered without its broker.
		set("job", m.job(target(api.CreateAgentRequest{}), api.JobStateCancelled))
	case "PUT /api/v1/runtime-brokers/{broker}/secrets/{name}", "DELETE /api/v1/runtime-brokers/{broker}/secrets/{name}",
		"GET /api/v1/runtime-brokers/{broker}/secrets", "GET /api/v1/runtime-brokers/{broker}/secrets/{name}/value":
		name := strings.ReplaceAll(m.name("B"), "-", "_")
		set("broker", "b1")
		set("name", name)
		if _, err := e.Admin.PutBrokerSecret(ctx, "b1", name, "broker-secret-value"); err != nil {
			t.Fatal(err)
		}
		c.body = api.PutSecretRequest{Value: "s3cr3t-value"}
	case "PATCH /api/v1/users/{user}":
		set("user", "vie")
		c.body = api.UpdateUserRequest{Role: ptr(api.RoleViewer)}
	case "POST /api/v1/auth/tokens":
		c.body = api.CreateAccessTokenRequest{Name: "ci", Project: m.project, Scopes: []string{"project:read"}}
	case "DELETE /api/v1/auth/tokens/{id}":
		tok, err := m.member.CreateAccessToken(ctx, api.CreateAccessTokenRequest{Name: "x", Project: m.project, Scopes: []string{"project:read"}})
		if err != nil {
			t.Fatal(err)
		}
		set("id", tok.ID)
	case "PUT /api/v1/secrets/{name}", "DELETE /api/v1/secrets/{name}":
		name := strings.ReplaceAll(m.name("S"), "-", "_")
		set("name", name)
		if variant == "" {
			path += "?project=" + m.project
		}
		if method == http.MethodDelete {
			if _, err := m.member.PutSecret(ctx, m.project, name, "v"); err != nil {
				t.Fatal(err)
			}
		}
		c.body = api.PutSecretRequest{Value: "s3cr3t-value"}
	case "GET /api/v1/secrets":
		path += "?project=" + m.project
	case "PUT /api/v1/settings":
		c.body = api.HubSettings{}
	case "PUT /api/v1/admin/limits":
		c.body = api.Limits{MaxAgentsPerBroker: 0}
	case "POST /api/v1/admin/metrics-tokens":
		c.body = api.CreateMetricsTokenRequest{Name: "prom"}
	case "DELETE /api/v1/admin/metrics-tokens/{id}":
		tok, err := e.Admin.CreateMetricsToken(ctx, api.CreateMetricsTokenRequest{Name: m.name("prom")})
		if err != nil {
			t.Fatal(err)
		}
		set("id", tok.ID)
	}
	for k, v := range vars {
		path = strings.Replace(path, "{"+k+"}", v, 1)
	}
	c.path = path
	return c, token
}

// job writes a Job row of agent agentID (on b1, run by the member) in
// state st, with logs and a trace.
func (m *matrixEnv) job(agentID string, st api.JobState) string {
	m.t.Helper()
	now := time.Now().UTC()
	j := &store.Job{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: m.project, AgentID: agentID, BrokerID: m.e.Brokers()[0].ID,
		Cluster: "h200", Image: "busybox", Command: []string{"true"}, DeadlineSeconds: 60, State: st, CreatedBy: "user:mem",
		CreatedAt: now, UpdatedAt: now, Logs: "log line\n", LogBytes: 9, Trace: []byte("trace"), TraceBytes: 5}
	if err := m.e.Store.CreateJob(m.ctx, j); err != nil {
		m.t.Fatal(err)
	}
	return j.ID
}

func (m *matrixEnv) send(c cell, token string) (int, string) {
	var body io.Reader
	if c.body != nil {
		b, _ := json.Marshal(c.body)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(m.ctx, c.method, m.e.URL+c.path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "" // a live feed: the status is the answer
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// TestAuthorizationMatrix sends every route as every kind of caller and
// checks each answer against the table above. It fails if a route of the
// Hub has no row, so no route can be added without deciding who may call
// it (and a route whose handler never asks hub/authz answers 500, which
// no row expects).
func TestAuthorizationMatrix(t *testing.T) {
	m := newMatrixEnv(t)
	covered := map[string]bool{}
	for _, row := range m.e.Hub.Routes() {
		covered[row.Pattern] = false
	}
	for _, row := range matrix {
		pattern, _, _ := strings.Cut(row.route, " | ")
		if _, ok := covered[pattern]; !ok {
			t.Errorf("matrix row %q names no route of the Hub", row.route)
		}
		covered[pattern] = true
		want := strings.Fields(row.expect)
		if len(want) != len(matrixCallers) {
			t.Fatalf("row %q has %d cells, want %d", row.route, len(want), len(matrixCallers))
		}
		for i, caller := range matrixCallers {
			c, token := m.prepare(row.route, caller)
			got, body := m.send(c, token)
			if fmt.Sprint(got) != want[i] {
				t.Errorf("%-70s as %-30s = %d, want %s: %s", row.route, caller, got, want[i], strings.TrimSpace(body))
			}
		}
	}
	for pattern, ok := range covered {
		if !ok {
			t.Errorf("route %q has no row in the authorization matrix", pattern)
		}
	}
}

// TestEveryRouteIsInTheMatrixTable is the cheap half of the matrix: it
// needs no requests, only the route table.
func TestEveryRouteIsInTheMatrixTable(t *testing.T) {
	have := map[string]bool{}
	for _, row := range matrix {
		p, _, _ := strings.Cut(row.route, " | ")
		have[p] = true
	}
	e := testenv.New(t, testenv.Options{})
	for _, r := range e.Hub.Routes() {
		if !have[r.Pattern] {
			t.Errorf("route %q has no row in the authorization matrix", r.Pattern)
		}
	}
	var _ = hub.Route{}
}
