package hub_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// syncBuffer collects log lines from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recorder keeps every API response body a test saw.
type recorder struct {
	mu     sync.Mutex
	bodies []string
	next   http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.Header.Get("Content-Type") == "text/plain; charset=utf-8" {
		return resp, err
	}
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	resp.Body.Close()
	r.mu.Lock()
	r.bodies = append(r.bodies, b.String())
	r.mu.Unlock()
	resp.Body = nopCloser{bytes.NewReader(b.Bytes())}
	return resp, nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// TestSecretsNeverLeak: a secret set through the API reaches the agent
// that names it (in its environment, through its broker) and nowhere
// else: not in any API answer, not in the Hub's or broker's logs.
func TestSecretsNeverLeak(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		logs := &syncBuffer{}
		e := testenv.New(t, testenv.Options{Brokers: 1, Postgres: pg, LogTo: logs})
		ctx := context.Background()
		rec := &recorder{next: http.DefaultTransport}
		admin := client.New(e.URL, e.AdminToken, client.WithHTTPClient(&http.Client{Transport: rec}))
		const value = "sk-live-7c1e0f3a-do-not-leak"
		e.NeverLogged(value, value+"-hub")
		if _, err := admin.PutSecret(ctx, "default", "API_KEY", value); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.PutSecret(ctx, "", "HUB_KEY", value+"-hub"); err != nil {
			t.Fatal(err)
		}
		list, err := admin.ListSecrets(ctx, "default")
		if err != nil || len(list) != 1 || list[0].Name != "API_KEY" {
			t.Fatalf("list = %+v, %v", list, err)
		}
		ag, err := admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "uses", Project: "default", Start: true,
			Command: []string{"x"}, Secrets: []string{"API_KEY", "HUB_KEY"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ag.Secrets) != 2 {
			t.Fatalf("the agent record names its secrets: %+v", ag.Secrets)
		}
		if _, err := admin.GetAgent(ctx, "uses", "default"); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.ListAllAgents(ctx, client.AgentFilter{}); err != nil {
			t.Fatal(err)
		}
		// The agent sees the values, under their names.
		for name, want := range map[string]string{"API_KEY": value, "HUB_KEY": value + "-hub"} {
			var out bytes.Buffer
			if _, err := e.Admin.Exec(ctx, "uses", "default", api.ExecRequest{Command: []string{"env", name}}, &out, nil); err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(out.String()) != want {
				t.Fatalf("agent env %s = %q", name, out.String())
			}
		}
		// An unknown secret is refused before anything is created.
		_, err = admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "bad", Project: "default", Command: []string{"x"}, Secrets: []string{"NOPE"}})
		apiErr(t, err, 404, api.CodeSecretNotFound)

		// The value is stored sealed: the database never holds it.
		x, err := e.Store.GetSecret(ctx, e.ProjectID, "API_KEY")
		if err != nil || bytes.Contains(x.Ciphertext, []byte(value)) || len(x.Ciphertext) < len(value) {
			t.Fatalf("stored secret not sealed: %v", err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.bodies) < 5 {
			t.Fatalf("recorded %d answers", len(rec.bodies))
		}
		for _, b := range rec.bodies {
			if strings.Contains(b, value) {
				t.Fatalf("an API answer carries the secret: %s", b)
			}
		}
		if strings.Contains(logs.String(), value) {
			t.Fatal("the logs carry the secret")
		}
		if !strings.Contains(logs.String(), "secret set") {
			t.Fatal("the log capture saw nothing: the scan proves nothing")
		}
	})
}

// TestBadTokensRefused: expired, forged, revoked, wrong-project tokens
// and a replayed broker signature are all refused, and the refusals are
// logged without the credential.
func TestBadTokensRefused(t *testing.T) {
	logs := &syncBuffer{}
	e := testenv.New(t, testenv.Options{Brokers: 1, LogTo: logs})
	ctx := context.Background()
	other, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	// Revoked.
	tok, err := e.Admin.CreateAccessToken(ctx, api.CreateAccessTokenRequest{Name: "ci", Project: "default", Scopes: []string{"project:read"}})
	if err != nil {
		t.Fatal(err)
	}
	as := client.New(e.URL, tok.Token)
	if _, err := as.GetProject(ctx, "default"); err != nil {
		t.Fatalf("a fresh token works: %v", err)
	}
	// Wrong project: answered like an unknown project.
	_, err = as.GetProject(ctx, other.ID)
	apiErr(t, err, 404, api.CodeProjectNotFound)
	if err := e.Admin.RevokeAccessToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err = as.GetProject(ctx, "default")
	apiErr(t, err, 401, api.CodeUnauthorized)
	// Expired.
	past := time.Now().Add(-time.Minute)
	expired := "scp_expired-token-0123456789abcdef"
	sum := sha256.Sum256([]byte(expired))
	if err := e.Store.CreateToken(ctx, &store.Token{ID: "exp", Hash: sum[:], Kind: store.TokenUser, UserID: "admin",
		ProjectID: e.ProjectID, Scopes: []string{"project:read"}, ExpiresAt: &past, CreatedAt: past}); err != nil {
		t.Fatal(err)
	}
	_, err = client.New(e.URL, expired).GetProject(ctx, "default")
	apiErr(t, err, 401, api.CodeUnauthorized)
	// A forged agent token: a real one with its signature changed.
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := e.Admin.Exec(ctx, "a", "default", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	real := strings.TrimSpace(out.String())
	if _, err := client.New(e.URL, real).Whoami(ctx); err != nil {
		t.Fatalf("the real agent token works: %v", err)
	}
	forged := real[:len(real)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(real, "AA")]
	_, err = client.New(e.URL, forged).Whoami(ctx)
	apiErr(t, err, 401, api.CodeUnauthorized)
	// A replayed broker signature: the same signed headers twice.
	b := e.Brokers()[0]
	path := "/api/v1/runtime-brokers/" + b.ID
	req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
	wire.SignHeaders(req.Header, b.ID, []byte(b.Secret), wire.SignedRequest{Method: "GET", Path: path}, time.Now())
	for i, want := range []int{200, 401} {
		r2 := req.Clone(ctx)
		resp, err := http.DefaultClient.Do(r2)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("broker request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	l := logs.String()
	for _, secret := range []string{tok.Token, expired, forged, real, b.Secret, req.Header.Get(api.HeaderBrokerSignature)} {
		if strings.Contains(l, secret) {
			t.Fatalf("a credential reached the logs: %q", secret[:8])
		}
	}
	for _, why := range []string{"user token rejected", "agent token rejected", "broker authentication failed"} {
		if !strings.Contains(l, why) {
			t.Fatalf("no log line %q for a refused credential", why)
		}
	}
}

// TestDelegation: who is accountable for an agent, and who may hand out a
// role.
func TestDelegation(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	memberTok := userToken(t, e.Store, "mem", api.RoleMember, "", nil)
	member := client.New(e.URL, memberTok)
	if _, err := e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{}); err != nil {
		t.Fatal(err)
	}
	// A member cannot hand out the coordinator role; an admin can.
	_, err := member.CreateAgent(ctx, api.CreateAgentRequest{Name: "boss", Project: "default", Role: "coordinator", Command: []string{"x"}})
	apiErr(t, err, 403, api.CodeForbidden)
	boss, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "boss", Project: "default", Role: "coordinator", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if boss.Delegator != "user:admin" || len(boss.DelegationChain) != 1 {
		t.Fatalf("admin-made agent: delegator %q chain %v", boss.Delegator, boss.DelegationChain)
	}
	// The coordinator's child: the admin stays accountable, the chain
	// grows, and the coordinator may hand on its own role.
	var out bytes.Buffer
	if _, err := e.Admin.Exec(ctx, "boss", "default", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	as := client.New(e.URL, strings.TrimSpace(out.String()))
	kid, err := as.CreateAgent(ctx, api.CreateAgentRequest{Name: "kid", Role: "coordinator", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if kid.Delegator != "user:admin" || strings.Join(kid.DelegationChain, ",") != "user:admin,agent:"+boss.ID || kid.ParentAgentID != boss.ID {
		t.Fatalf("child: delegator %q chain %v parent %q", kid.Delegator, kid.DelegationChain, kid.ParentAgentID)
	}
	// A role change makes the caller the delegator.
	kid, err = e.Admin.UpdateAgent(ctx, "kid", "default", api.UpdateAgentRequest{Role: ptr("worker")})
	if err != nil || kid.Role != "worker" || kid.Delegator != "user:admin" {
		t.Fatalf("role change: %+v %v", kid, err)
	}
	// A member cannot act on (restart) an agent whose role they cannot
	// delegate, even in a project they may otherwise use.
	_, err = member.AgentAction(ctx, "boss", "default", "restart")
	apiErr(t, err, 403, api.CodeForbidden)
	// Agents never update projects.
	_, err = as.UpdateProject(ctx, "default", api.UpdateProjectRequest{ActiveProfile: ptr("x")})
	apiErr(t, err, 403, api.CodeForbidden)
}

// TestPassthroughIdentity: only a signed-in user lends a passthrough
// identity, and only a broker that allows it runs such an agent.
func TestPassthroughIdentity(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 2, Capabilities: map[string][]string{"b2": {"passthrough:gcp"}}})
	ctx := context.Background()
	req := func(name, broker string) api.CreateAgentRequest {
		return api.CreateAgentRequest{Name: name, Project: "default", Broker: broker, Passthrough: "gcp", Start: true, Command: []string{"x"}}
	}
	_, err := e.Admin.CreateAgent(ctx, req("pt1", "b1"))
	apiErr(t, err, 403, api.CodeForbidden)
	pt, err := e.Admin.CreateAgent(ctx, req("pt2", "b2"))
	if err != nil || pt.Passthrough != "gcp" {
		t.Fatalf("passthrough agent on an allowing broker: %+v %v", pt, err)
	}
	// The passthrough agent cannot lend the identity on to a child.
	var out bytes.Buffer
	if _, err := e.Admin.Exec(ctx, "pt2", "default", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	as := client.New(e.URL, strings.TrimSpace(out.String()))
	_, err = as.CreateAgent(ctx, req("pt3", "b2"))
	apiErr(t, err, 403, api.CodeForbidden)
	_, err = e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "pt4", Project: "default", Broker: "b2", Passthrough: "aws", Command: []string{"x"}})
	apiErr(t, err, 400, api.CodeInvalidRequest)
}

// TestConfinedCallersSeeOnlyTheirProject: a token (or agent) sees the
// brokers that serve its project, and of their projects only its own.
func TestConfinedCallersSeeOnlyTheirProject(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	other, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "secret-plans"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.ProvideProject(ctx, "b1", other.ID); err != nil {
		t.Fatal(err)
	}
	tok, err := e.Admin.CreateAccessToken(ctx, api.CreateAccessTokenRequest{Name: "ci", Project: "default", Scopes: []string{"project:read"}})
	if err != nil {
		t.Fatal(err)
	}
	as := client.New(e.URL, tok.Token)
	b, err := as.GetBroker(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Projects) != 1 || b.Projects[0] != e.ProjectID {
		t.Fatalf("a token sees the broker's projects %v, want only its own", b.Projects)
	}
	bs, err := as.ListAllBrokers(ctx)
	if err != nil || len(bs) != 1 || len(bs[0].Projects) != 1 {
		t.Fatalf("list as a token: %+v %v", bs, err)
	}
	full, err := e.Admin.GetBroker(ctx, "b1")
	if err != nil || len(full.Projects) != 2 {
		t.Fatalf("an admin sees both projects: %+v %v", full, err)
	}
}
