package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// seen is what a fake Hub observed of one request.
type seen struct {
	Method, EscapedPath, RawQuery, Auth, Idem, UA, Body string
}

// recordServer answers every request with status and body, and records it.
func recordServer(t *testing.T, status int, body string) (*httptest.Server, *[]seen) {
	t.Helper()
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"),
			r.Header.Get(api.HeaderIdempotencyKey), r.Header.Get("User-Agent"), string(b)})
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// TestRoutes calls every method once and checks the method and path the Hub
// sees, which is the route table of api/routes.go.
func TestRoutes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, method, path, query string
		call                      func(c *Client) error
	}{
		{"whoami", "GET", "/api/v1/auth/whoami", "", func(c *Client) error { _, err := c.Whoami(ctx); return err }},
		{"create project", "POST", "/api/v1/projects", "", func(c *Client) error {
			_, err := c.CreateProject(ctx, api.CreateProjectRequest{Name: "p"})
			return err
		}},
		{"list projects", "GET", "/api/v1/projects", "cursor=c1&limit=5", func(c *Client) error { _, err := c.ListProjects(ctx, "c1", 5); return err }},
		{"get project", "GET", "/api/v1/projects/p", "", func(c *Client) error { _, err := c.GetProject(ctx, "p"); return err }},
		{"update project", "PATCH", "/api/v1/projects/p", "", func(c *Client) error {
			_, err := c.UpdateProject(ctx, "p", api.UpdateProjectRequest{})
			return err
		}},
		{"delete project", "DELETE", "/api/v1/projects/p", "", func(c *Client) error { _, err := c.DeleteProject(ctx, "p"); return err }},
		{"force delete project", "DELETE", "/api/v1/projects/p", "force=true", func(c *Client) error { _, err := c.ForceDeleteProject(ctx, "p"); return err }},
		{"register broker", "POST", "/api/v1/runtime-brokers", "", func(c *Client) error {
			_, err := c.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: "b"})
			return err
		}},
		{"join broker", "POST", "/api/v1/runtime-brokers/join", "", func(c *Client) error { _, err := c.JoinBroker(ctx, "tok", "b"); return err }},
		{"join token", "POST", "/api/v1/runtime-brokers/join-tokens", "", func(c *Client) error {
			_, err := c.CreateJoinToken(ctx, api.CreateJoinTokenRequest{})
			return err
		}},
		{"list brokers", "GET", "/api/v1/runtime-brokers", "", func(c *Client) error { _, err := c.ListBrokers(ctx, "", 0); return err }},
		{"get broker", "GET", "/api/v1/runtime-brokers/b", "", func(c *Client) error { _, err := c.GetBroker(ctx, "b"); return err }},
		{"update broker", "PATCH", "/api/v1/runtime-brokers/b", "", func(c *Client) error {
			_, err := c.UpdateBroker(ctx, "b", api.UpdateBrokerRequest{})
			return err
		}},
		{"deregister", "DELETE", "/api/v1/runtime-brokers/b", "", func(c *Client) error { return c.DeregisterBroker(ctx, "b") }},
		{"provide", "PUT", "/api/v1/runtime-brokers/b/projects/p", "", func(c *Client) error { _, err := c.ProvideProject(ctx, "b", "p"); return err }},
		{"withdraw", "DELETE", "/api/v1/runtime-brokers/b/projects/p", "", func(c *Client) error { _, err := c.WithdrawProject(ctx, "b", "p"); return err }},
		{"create agent", "POST", "/api/v1/agents", "", func(c *Client) error {
			_, err := c.CreateAgent(ctx, api.CreateAgentRequest{Name: "a"})
			return err
		}},
		{"list agents", "GET", "/api/v1/agents", "broker=b&limit=3&phase=running&project=p", func(c *Client) error {
			_, err := c.ListAgents(ctx, AgentFilter{Project: "p", Broker: "b", Phase: "running"}, "", 3)
			return err
		}},
		{"get agent", "GET", "/api/v1/agents/a", "project=p", func(c *Client) error { _, err := c.GetAgent(ctx, "a", "p"); return err }},
		{"get agent by id", "GET", "/api/v1/agents/a", "", func(c *Client) error { _, err := c.GetAgent(ctx, "a", ""); return err }},
		{"delete agent", "DELETE", "/api/v1/agents/a", "project=p", func(c *Client) error { return c.DeleteAgent(ctx, "a", "p") }},
		{"logs", "GET", "/api/v1/agents/a/logs", "follow=true&project=p&tail=10", func(c *Client) error {
			rc, err := c.Logs(ctx, "a", "p", true, 10)
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"get settings", "GET", "/api/v1/settings", "", func(c *Client) error { _, err := c.GetSettings(ctx); return err }},
		{"put settings", "PUT", "/api/v1/settings", "", func(c *Client) error { _, err := c.PutSettings(ctx, api.HubSettings{}); return err }},
		{"get limits", "GET", "/api/v1/admin/limits", "", func(c *Client) error { _, err := c.GetLimits(ctx); return err }},
		{"put limits", "PUT", "/api/v1/admin/limits", "", func(c *Client) error { _, err := c.PutLimits(ctx, api.Limits{}); return err }},
		{"healthz", "GET", "/healthz", "", func(c *Client) error { _, err := c.Healthz(ctx); return err }},
	}
	for _, action := range []string{"start", "stop", "restart", "suspend", "resume"} {
		cases = append(cases, struct {
			name, method, path, query string
			call                      func(c *Client) error
		}{"action " + action, "POST", "/api/v1/agents/a/" + action, "project=p", func(c *Client) error {
			_, err := c.AgentAction(ctx, "a", "p", action)
			return err
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := recordServer(t, 200, "{}")
			if err := tc.call(New(srv.URL, "tok", WithUserAgent("ua/1"))); err != nil {
				t.Fatal(err)
			}
			if len(*got) != 1 {
				t.Fatalf("%d requests", len(*got))
			}
			g := (*got)[0]
			if g.Method != tc.method || g.EscapedPath != tc.path || g.RawQuery != tc.query {
				t.Errorf("got %s %s?%s, want %s %s?%s", g.Method, g.EscapedPath, g.RawQuery, tc.method, tc.path, tc.query)
			}
			if g.UA != "ua/1" {
				t.Errorf("User-Agent %q", g.UA)
			}
			// Join and healthz need no caller; everything else sends the token.
			wantAuth := "Bearer tok"
			if tc.name == "join broker" || tc.name == "healthz" {
				wantAuth = ""
			}
			if g.Auth != wantAuth {
				t.Errorf("Authorization %q, want %q", g.Auth, wantAuth)
			}
		})
	}
}

func TestUnknownActionAndEmptySegment(t *testing.T) {
	c := New("http://127.0.0.1:1", "")
	if _, err := c.AgentAction(context.Background(), "a", "", "explode"); err == nil {
		t.Error("unknown action accepted")
	}
	if _, err := c.GetAgent(context.Background(), "", "p"); err == nil {
		t.Error("empty agent accepted")
	}
	if _, err := c.ProvideProject(context.Background(), "b", ""); err == nil {
		t.Error("empty project accepted")
	}
}

func TestEscaping(t *testing.T) {
	var raw, decoded string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/agents/{agent}", func(w http.ResponseWriter, r *http.Request) {
		raw, decoded = r.URL.EscapedPath(), r.PathValue("agent")
		json.NewEncoder(w).Encode(api.Agent{Slug: decoded})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	a, err := New(srv.URL+"/", "").GetAgent(context.Background(), "a b/../c?d#e", "p&x=1")
	if err != nil {
		t.Fatal(err)
	}
	if raw != "/api/v1/agents/a%20b%2F..%2Fc%3Fd%23e" || decoded != "a b/../c?d#e" || a.Slug != decoded {
		t.Errorf("raw %q decoded %q", raw, decoded)
	}
}

func TestErrorDecoding(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		code     string
		msgSub   string
		detailOK bool
	}{
		{"api error", 429, `{"error":{"code":"quota_exceeded","message":"broker b is full","details":{"limit":3}}}`, "quota_exceeded", "broker b is full", true},
		{"api error without code", 409, `{"error":{"message":"taken"}}`, "conflict", "taken", false},
		{"plain text", 502, "Bad gateway from proxy\n<more>", "runtime_error", "HTTP 502 Bad Gateway: Bad gateway from proxy", false},
		{"html 503", 503, "<html>down</html>", "runtime_broker_unavailable", "HTTP 503", false},
		{"empty 404", 404, "", "not_found", "HTTP 404 Not Found", false},
		{"other json", 500, `{"oops":1}`, "internal", "HTTP 500", false},
		{"teapot", 418, "", "invalid_request", "HTTP 418", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := recordServer(t, tc.status, tc.body)
			_, err := New(srv.URL, "").GetProject(context.Background(), "p")
			var e *api.Error
			if !errors.As(err, &e) {
				t.Fatalf("err %T %v, want *api.Error", err, err)
			}
			if e.Status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msgSub) {
				t.Errorf("got %d %q %q", e.Status, e.Code, e.Message)
			}
			if tc.detailOK && e.Details["limit"] != float64(3) {
				t.Errorf("details %v", e.Details)
			}
		})
	}
}

func TestBoundedBodies(t *testing.T) {
	old := maxResponseBody
	maxResponseBody = 1024
	defer func() { maxResponseBody = old }()
	srv, _ := recordServer(t, 200, `{"name":"`+strings.Repeat("x", 2048)+`"}`)
	if _, err := New(srv.URL, "").GetProject(context.Background(), "p"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("err %v", err)
	}
	// An error body is cut at maxErrorBody and still decoded as an error.
	srv2, _ := recordServer(t, 500, strings.Repeat("y", 200<<10))
	_, err := New(srv2.URL, "").GetProject(context.Background(), "p")
	if e := api.AsError(err); e.Status != 500 || len(e.Message) > 300 {
		t.Errorf("status %d, message length %d", e.Status, len(e.Message))
	}
	// A request bigger than the Hub accepts is refused before it is sent.
	srv3, got := recordServer(t, 200, "{}")
	_, err = New(srv3.URL, "").CreateAgent(context.Background(), api.CreateAgentRequest{Name: "a", Payload: json.RawMessage(`"` + strings.Repeat("z", api.MaxRequestBody) + `"`)})
	if !api.IsCode(err, api.CodeRequestTooLarge) || len(*got) != 0 {
		t.Errorf("err %v, %d requests", err, len(*got))
	}
}

func TestIdempotencyKey(t *testing.T) {
	srv, got := recordServer(t, 200, "{}")
	c := New(srv.URL, "")
	ctx := WithIdempotencyKey(context.Background(), "k-1")
	c.CreateAgent(ctx, api.CreateAgentRequest{Name: "a"})
	c.GetAgent(ctx, "a", "p")
	c.DeleteAgent(ctx, "a", "p")
	c.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "a"})
	want := []string{"k-1", "", "k-1", ""} // GETs never carry it; no key, no header
	for i, g := range *got {
		if g.Idem != want[i] {
			t.Errorf("request %d (%s): key %q, want %q", i, g.Method, g.Idem, want[i])
		}
	}
	if a, b := NewIdempotencyKey(), NewIdempotencyKey(); a == b || len(a) != 32 {
		t.Errorf("keys %q %q", a, b)
	}
}

// pagedServer serves n projects in pages of size per page, with opaque
// cursors, and a true total.
func pagedServer(t *testing.T, n, size int, brokenCursor bool) (*httptest.Server, *int) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		start := 0
		if c := r.URL.Query().Get("cursor"); c != "" && !brokenCursor {
			fmt.Sscanf(c, "after-%d", &start)
		}
		l := api.List[api.Project]{Items: []api.Project{}, Total: n}
		for i := start; i < n && i < start+size; i++ {
			l.Items = append(l.Items, api.Project{Name: fmt.Sprintf("p%d", i)})
		}
		if start+size < n {
			l.NextCursor = fmt.Sprintf("after-%d", start+size)
		}
		json.NewEncoder(w).Encode(l)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestListAllFollowsCursors(t *testing.T) {
	srv, calls := pagedServer(t, 7, 3, false)
	all, err := New(srv.URL, "").ListAllProjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 || all[6].Name != "p6" || *calls != 3 {
		t.Errorf("%d items, %d calls", len(all), *calls)
	}
	empty, _ := pagedServer(t, 0, 3, false)
	all, err = New(empty.URL, "").ListAllProjects(context.Background())
	if err != nil || all == nil || len(all) != 0 {
		t.Errorf("empty list: %v %v", all, err)
	}
}

// A server that ignores the cursor (a known upstream failure) must not make
// the client loop forever.
func TestListAllStopsOnRepeatedCursor(t *testing.T) {
	srv, calls := pagedServer(t, 7, 3, true)
	_, err := New(srv.URL, "").ListAllProjects(context.Background())
	if err == nil || !strings.Contains(err.Error(), "twice") || *calls != 2 {
		t.Errorf("err %v after %d calls", err, *calls)
	}
}

func TestLogsStreamsAndErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/agents/{agent}/logs", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("agent") == "gone" {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"agent_not_found","message":"no agent gone"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "line 1\nline 2\n")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := New(srv.URL, "")
	rc, err := c.Logs(context.Background(), "a", "p", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "line 1\nline 2\n" {
		t.Errorf("logs %q", b)
	}
	if _, err := c.Logs(context.Background(), "gone", "p", false, 0); !api.IsCode(err, api.CodeAgentNotFound) {
		t.Errorf("err %v", err)
	}
}

func TestContextCancels(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(srv.URL, "").Whoami(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}
