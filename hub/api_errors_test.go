package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

// call sends a raw request and decodes the standard error body if any.
func call(t *testing.T, method, url, token, contentType string, body []byte) (int, *api.Error) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 400 {
		return resp.StatusCode, nil
	}
	var eb api.ErrorBody
	if err := json.Unmarshal(raw, &eb); err != nil || eb.Error == nil || eb.Error.Code == "" || eb.Error.Message == "" {
		t.Fatalf("%s %s: status %d without the standard error body: %q", method, url, resp.StatusCode, raw)
	}
	return resp.StatusCode, eb.Error
}

// Every non-public route refuses a caller without credentials, or with bad
// ones, with 401 and the standard body. The route list comes from the
// Hub itself, so a new route cannot skip this test.
func TestEveryRouteNeedsAuthentication(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	for _, rt := range e.Hub.Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		path = strings.NewReplacer("{project}", "default", "{broker}", "b", "{agent}", "a", "{action}", "start", "{$}", "").Replace(path)
		if rt.Public {
			continue
		}
		toks := []string{"", "scu_bogus", "sca_e30.AAAA", "garbage"}
		if isUIPage(rt.Pattern) {
			// A browser without a session is sent to the sign-in page.
			checkLoginRedirect(t, e.URL+path)
			toks = toks[1:]
		}
		for _, tok := range toks {
			status, ae := call(t, method, e.URL+path, tok, "application/json", []byte(`{}`))
			if status != http.StatusUnauthorized || ae.Code != api.CodeUnauthorized {
				t.Errorf("%s with token %q: %d %v, want 401 unauthorized", rt.Pattern, tok, status, ae)
			}
		}
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	tok := e.AdminToken
	agents := e.URL + "/api/v1/agents"
	big := append([]byte(`{"name":"x","project":"default","payload":"`), bytes.Repeat([]byte("a"), api.MaxRequestBody+1)...)
	big = append(big, `"}`...)
	cases := []struct {
		name, method, url, ct string
		body                  []byte
		status                int
		code                  string
	}{
		{"malformed JSON", "POST", agents, "application/json", []byte(`{"name":`), 400, api.CodeInvalidRequest},
		{"unknown field", "POST", agents, "application/json", []byte(`{"name":"x","project":"default","bogus":1}`), 400, api.CodeInvalidRequest},
		{"wrong type", "POST", agents, "application/json", []byte(`{"name":7}`), 400, api.CodeInvalidRequest},
		{"two objects", "POST", agents, "application/json", []byte(`{"name":"x"}{"name":"y"}`), 400, api.CodeInvalidRequest},
		{"empty body", "POST", agents, "application/json", nil, 400, api.CodeInvalidRequest},
		{"wrong content type", "POST", agents, "text/plain", []byte(`{"name":"x"}`), 415, api.CodeUnsupportedMediaType},
		{"oversized body", "POST", agents, "application/json", big, 413, api.CodeRequestTooLarge},
		{"bad agent name", "POST", agents, "application/json", []byte(`{"name":"Bad Name!","project":"default"}`), 400, api.CodeInvalidRequest},
		{"bad env name", "POST", agents, "application/json", []byte(`{"name":"ok","project":"default","env":{"1X":"v"}}`), 400, api.CodeInvalidRequest},
		{"unknown harness", "POST", agents, "application/json", []byte(`{"name":"ok","project":"default","harness":"nope"}`), 400, api.CodeInvalidRequest},
		{"unknown project", "POST", agents, "application/json", []byte(`{"name":"ok","project":"nope"}`), 404, api.CodeProjectNotFound},
		{"unknown broker", "POST", agents, "application/json", []byte(`{"name":"ok","project":"default","broker":"nope"}`), 404, api.CodeBrokerNotFound},
		{"unknown agent", "GET", agents + "/nope", "", nil, 404, api.CodeAgentNotFound},
		{"unknown agent by ID", "GET", agents + "/01890000-0000-7000-8000-000000000000", "", nil, 404, api.CodeAgentNotFound},
		{"unknown action", "POST", agents + "/nope/explode", "", nil, 404, api.CodeNotFound},
		{"unknown broker get", "GET", e.URL + "/api/v1/runtime-brokers/nope", "", nil, 404, api.CodeBrokerNotFound},
		{"bad project name", "POST", e.URL + "/api/v1/projects", "application/json", []byte(`{"name":"../etc"}`), 400, api.CodeInvalidRequest},
		{"bad sharing mode", "POST", e.URL + "/api/v1/projects", "application/json", []byte(`{"name":"p2","sharingMode":"all"}`), 400, api.CodeInvalidRequest},
		{"bad limit", "GET", agents + "?limit=0", "", nil, 400, api.CodeInvalidRequest},
		{"negative max agents", "PUT", e.URL + "/api/v1/admin/limits", "application/json", []byte(`{"max_agents_per_broker":-1}`), 400, api.CodeInvalidRequest},
		{"unknown route", "GET", e.URL + "/api/v1/nothing", "", nil, 404, api.CodeNotFound},
		{"bad join token", "POST", e.URL + "/api/v1/runtime-brokers/join", "application/json", []byte(`{"name":"x","joinToken":"scj_nope"}`), 401, api.CodeUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, ae := call(t, tc.method, tc.url, tok, tc.ct, tc.body)
			if status != tc.status || ae == nil || ae.Code != tc.code {
				t.Fatalf("got %d %+v, want %d %s", status, ae, tc.status, tc.code)
			}
		})
	}
	// Nothing was created by any of them.
	l, err := e.Admin.ListAgents(context.Background(), client.AgentFilter{}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Total != 0 {
		t.Fatalf("bad requests created %d agents", l.Total)
	}
	ps, _ := e.Admin.ListAllProjects(context.Background())
	if len(ps) != 1 {
		t.Fatalf("bad requests created projects: %d", len(ps))
	}
}

// A broker's signed headers cannot be replayed, forged or used for another
// path.
func TestBrokerSignatureReplayRefused(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	creds, err := e.Hub.RegisterBroker(ctx, "signer", "admin", false)
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/runtime-brokers/" + creds.BrokerID
	h := http.Header{}
	wire.SignHeaders(h, creds.BrokerID, []byte(creds.Secret), wire.SignedRequest{Method: "GET", Path: path}, time.Now())
	do := func(h http.Header, p string) int {
		req, _ := http.NewRequest("GET", e.URL+p, nil)
		req.Header = h.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do(h, path); got != 200 {
		t.Fatalf("first signed request: %d", got)
	}
	if got := do(h, path); got != 401 {
		t.Fatalf("replayed signature: %d, want 401", got)
	}
	h2 := http.Header{}
	wire.SignHeaders(h2, creds.BrokerID, []byte("wrong-secret"), wire.SignedRequest{Method: "GET", Path: path}, time.Now())
	if got := do(h2, path); got != 401 {
		t.Fatalf("wrong secret: %d, want 401", got)
	}
	h3 := http.Header{}
	wire.SignHeaders(h3, creds.BrokerID, []byte(creds.Secret), wire.SignedRequest{Method: "GET", Path: "/api/v1/runtime-brokers"}, time.Now())
	if got := do(h3, path); got != 401 {
		t.Fatalf("signature for another path: %d, want 401", got)
	}
	h4 := http.Header{}
	wire.SignHeaders(h4, creds.BrokerID, []byte(creds.Secret), wire.SignedRequest{Method: "GET", Path: path}, time.Now().Add(-time.Hour))
	if got := do(h4, path); got != 401 {
		t.Fatalf("stale timestamp: %d, want 401", got)
	}
}

func TestUnknownRouteMethod(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	status, ae := call(t, "GET", e.URL+"/api/v1/agents/x/start", e.AdminToken, "", nil)
	if status < 400 || ae == nil {
		t.Fatalf("GET on an action route: %d", status)
	}
}

// isUIPage: a page of the web UI (not its logs or events stream).
func isUIPage(pattern string) bool {
	return strings.Contains(pattern, " /ui/") && !strings.HasSuffix(pattern, "/logs") && !strings.HasSuffix(pattern, "/events")
}

func checkLoginRedirect(t *testing.T, url string) {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Errorf("GET %s without a session: %d to %q, want 303 to /ui/login", url, resp.StatusCode, resp.Header.Get("Location"))
	}
}
