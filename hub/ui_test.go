package hub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
)

// uiClient is a browser: a cookie jar, redirects followed.
func uiClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

func uiLogin(t *testing.T, hc *http.Client, base, token string) *http.Response {
	t.Helper()
	resp, err := hc.PostForm(base+"/ui/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sse reads server-sent events from a stream into a channel.
type sse struct {
	events chan [2]string // event, data
	body   io.Closer
}

func openEvents(t *testing.T, hc *http.Client, base string) *sse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/ui/events", nil)
	resp, err := (&http.Client{Jar: hc.Jar}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /ui/events: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &sse{events: make(chan [2]string, 256), body: resp.Body}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev != "":
				s.events <- [2]string{ev, data}
				ev, data = "", ""
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next waits for an event matching ok.
func (s *sse) next(t *testing.T, what string, ok func(event, data string) bool) (string, string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, open := <-s.events:
			if !open {
				t.Fatalf("the event stream ended before %s", what)
			}
			if ok(e[0], e[1]) {
				return e[0], e[1]
			}
		case <-deadline:
			t.Fatalf("no event for %s within 10 s", what)
		}
	}
}

// none checks no event matching bad arrives within d.
func (s *sse) none(t *testing.T, d time.Duration, what string, bad func(event, data string) bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e := <-s.events:
			if bad(e[0], e[1]) {
				t.Fatalf("%s: got %s %s", what, e[0], e[1])
			}
		case <-deadline:
			return
		}
	}
}

// TestWebPageSignInViewsAndLiveFeed: a browser signs in with a token
// (a bad one is refused), sees the overview and an agent's page, and the
// live feed brings it the changes of what its token may read, and
// nothing else; the session cookie writes nothing through the API.
func TestWebPageSignInViewsAndLiveFeed(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	admin := e.Admin
	p, err := admin.CreateProject(ctx, api.CreateProjectRequest{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := admin.CreateProject(ctx, api.CreateProjectRequest{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range []string{p.ID, q.ID} {
		if _, err := admin.ProvideProject(ctx, "b1", pr); err != nil {
			t.Fatal(err)
		}
	}
	// A token that reads agents of p only.
	tok := userToken(t, e.Store, "reader", api.RoleMember, p.ID, []string{"project:agent:read"})

	hc := uiClient(t)
	// Not signed in: the sign-in page.
	resp, err := hc.Get(e.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.Request.URL.Path != "/ui/login" || !strings.Contains(body, `name="token"`) {
		t.Fatalf("/ui/ without a session landed on %s", resp.Request.URL)
	}
	for k, want := range map[string]string{"Content-Security-Policy": "script-src 'self'", "X-Frame-Options": "DENY"} {
		if !strings.Contains(resp.Header.Get(k), want) {
			t.Errorf("%s: %q", k, resp.Header.Get(k))
		}
	}
	if resp := uiLogin(t, hc, e.URL, "scu_not-a-token"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(readBody(t, resp), "not accepted") {
		t.Fatalf("a bad token: %s", resp.Status)
	}
	// A sign-in posted from another site (login CSRF) is refused, and
	// sets no cookie.
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/ui/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("a cross-site sign-in: %v %v", resp, err)
	}
	resp = uiLogin(t, hc, e.URL, tok)
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/" || !strings.Contains(body, `id="agents"`) {
		t.Fatalf("after sign-in: %s at %s:\n%.500s", resp.Status, resp.Request.URL, body)
	}
	u, _ := url.Parse(e.URL + "/ui/")
	var session *http.Cookie
	for _, c := range hc.Jar.Cookies(u) {
		if c.Name == "scion_ui" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}

	// An agent that exists before the feed opens: in the feed's snapshot,
	// and said gone when deleted though no change of it was sent.
	pre, err := admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "pre", Project: "p", Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	feed := openEvents(t, hc, e.URL)
	feed.next(t, "hello", func(ev, _ string) bool { return ev == "hello" })
	feed.next(t, "the snapshot of agents", func(ev, data string) bool { return ev == "agents" && strings.Contains(data, pre.ID) })
	if err := admin.DeleteAgent(ctx, pre.ID, "p"); err != nil {
		t.Fatal(err)
	}
	feed.next(t, "pre gone", func(ev, data string) bool { return ev == "agent-gone" && strings.Contains(data, pre.ID) })

	// An agent of p: on the feed, then on the pages, escaped.
	a, err := admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "seen", Project: "p", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	feed.next(t, "agent seen running", func(ev, data string) bool {
		var got api.Agent
		return ev == "agent" && json.Unmarshal([]byte(data), &got) == nil && got.ID == a.ID && got.Phase == api.PhaseRunning
	})
	// An agent of q, which the token may not read: never on this feed.
	hidden, err := admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "hidden", Project: "q", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	feed.none(t, 500*time.Millisecond, "an agent of another project reached the feed", func(_, data string) bool {
		return strings.Contains(data, hidden.ID) || strings.Contains(data, `"hidden"`)
	})
	resp, err = hc.Get(e.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	body = readBody(t, resp)
	if !strings.Contains(body, ">seen<") || strings.Contains(body, ">hidden<") {
		t.Errorf("the overview shows %v seen and %v hidden", strings.Contains(body, ">seen<"), strings.Contains(body, ">hidden<"))
	}
	resp, err = hc.Get(e.URL + "/ui/agents/" + a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="slug">seen<`) {
		t.Errorf("agent page: %s", resp.Status)
	}
	if resp, _ := hc.Get(e.URL + "/ui/agents/" + hidden.ID); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusForbidden {
		t.Errorf("another project's agent page: %s", resp.Status)
	}

	// Stopped and deleted: the feed says so.
	if _, err := admin.AgentAction(ctx, a.ID, "p", "stop"); err != nil {
		t.Fatal(err)
	}
	feed.next(t, "agent seen stopped", func(ev, data string) bool {
		return ev == "agent" && strings.Contains(data, a.ID) && strings.Contains(data, `"phase":"stopped"`)
	})
	if err := admin.DeleteAgent(ctx, a.ID, "p"); err != nil {
		t.Fatal(err)
	}
	feed.next(t, "agent seen gone", func(ev, data string) bool { return ev == "agent-gone" && strings.Contains(data, a.ID) })

	// The cookie is for the page's reads: the API takes only bearer
	// tokens, so a cross-site form posting with the cookie does nothing.
	req, _ = http.NewRequest(http.MethodPost, e.URL+"/api/v1/agents", strings.NewReader(`{"name":"csrf","project":"p"}`))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(session)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST /api/v1/agents with the session cookie: %v %v", resp, err)
	}
	if _, err := admin.GetAgent(ctx, "csrf", "p"); !api.IsCode(err, api.CodeAgentNotFound) {
		t.Fatalf("the cookie created an agent: %v", err)
	}

	// Signed out: the cookie is gone and the page asks to sign in.
	resp, err = hc.PostForm(e.URL+"/ui/logout", nil)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.Request.URL.Path != "/ui/login" {
		t.Fatalf("sign-out landed on %s", resp.Request.URL)
	}
	resp, _ = hc.Get(e.URL + "/ui/")
	readBody(t, resp)
	if resp.Request.URL.Path != "/ui/login" {
		t.Fatalf("after sign-out /ui/ is %s", resp.Request.URL)
	}
	_ = client.New
}

// TestWebPageEscapesWhatAgentsSay: a status message, name or image with
// HTML in it is text on the page.
func TestWebPageEscapesWhatAgentsSay(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "x", Project: "default", Image: `img"><script>alert(1)</script>`, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	hc := uiClient(t)
	readBody(t, uiLogin(t, hc, e.URL, e.AdminToken))
	resp, err := hc.Get(e.URL + "/ui/agents/" + a.ID)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if strings.Contains(body, "<script>alert(1)") || !strings.Contains(body, "&lt;script&gt;alert(1)") {
		t.Fatalf("the image is not escaped:\n%s", body)
	}
}

// TestLiveFeedEndsWhenItsTokenIsRevoked: an open feed checks its
// credential again at each keep-alive: a revoked token's stream ends.
func TestLiveFeedEndsWhenItsTokenIsRevoked(t *testing.T) {
	defer hub.SetUIKeepAlive(200 * time.Millisecond)()
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	tok, err := e.Admin.CreateAccessToken(ctx, api.CreateAccessTokenRequest{Name: "feed", Project: "default", Scopes: []string{"project:agent:read"}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, resp.Body); close(ended) }()
	select {
	case <-ended:
		t.Fatal("the feed ended with its token still valid")
	case <-time.After(time.Second):
	}
	if err := e.Admin.RevokeAccessToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the feed of a revoked token is still open")
	}
}
