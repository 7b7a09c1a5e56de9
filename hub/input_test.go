package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
)

// storedState is everything a refused request could have written, read
// from the store itself (not through the API, whose caches could hide a
// write).
func storedState(t *testing.T, st store.Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, k := range []string{"hub_settings", "limits"} {
		v, err := st.GetSetting(ctx, k)
		fmt.Fprintf(&b, "setting %s=%s err=%v\n", k, v, err)
	}
	ps, _, _, err := st.ListProjects(ctx, store.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		fmt.Fprintf(&b, "project %s %q remote=%q profile=%q default=%q updated=%v\n", p.ID, p.Name, p.GitRemote, p.ActiveProfile, p.DefaultBrokerID, p.UpdatedAt)
	}
	as, _, _, err := st.ListAgents(ctx, store.AgentFilter{}, store.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		fmt.Fprintf(&b, "agent %s %q\n", a.ID, a.Slug)
	}
	users, err := st.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		toks, err := st.ListTokens(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "user %s tokens=%d\n", u.ID, len(toks))
	}
	return b.String()
}

func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Input the Hub used to store and then trip over (or hand to brokers) is
// refused with 400 invalid_request and the standard body, and nothing is
// written: Agent Defaults every create would fail on, a limits body that
// read as "unlimited", unbounded or multi-line git remotes, control
// characters in names, path-like profile names, garbage cursors.
func TestRefusedInputStoresNothing(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	// Known, non-default values, so a refused write that resets them shows.
	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.PutSettings(ctx, api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultHarness: "generic", DefaultImage: "busybox:1"}}); err != nil {
		t.Fatal(err)
	}
	remote := "https://git.example.com/team/repo.git"
	if _, err := e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{GitRemote: &remote}); err != nil {
		t.Fatal(err)
	}

	u := e.URL + "/api/v1"
	big := "https://git.example.com/" + strings.Repeat("a", 100_000)
	cases := []struct {
		name, method, url string
		body              any
	}{
		{"path as default harness", "PUT", u + "/settings", map[string]any{"agent_defaults": map[string]string{"default_harness": "../../sh"}}},
		{"unknown default harness", "PUT", u + "/settings", map[string]any{"agent_defaults": map[string]string{"default_harness": "bash"}}},
		{"default image with LF", "PUT", u + "/settings", map[string]any{"agent_defaults": map[string]string{"default_image": "busybox\nx"}}},
		{"limits without the field", "PUT", u + "/admin/limits", map[string]any{}},
		{"limits with null", "PUT", u + "/admin/limits", map[string]any{"max_agents_per_broker": nil}},
		{"100 kB git remote on create", "POST", u + "/projects", map[string]string{"name": "big", "gitRemote": big}},
		{"100 kB git remote on update", "PATCH", u + "/projects/default", map[string]string{"gitRemote": big}},
		{"CR/LF in git remote on create", "POST", u + "/projects", map[string]string{"name": "crlf", "gitRemote": "https://h/r.git\r\n[core]"}},
		{"LF in git remote on update", "PATCH", u + "/projects/default", map[string]string{"gitRemote": "https://h/r.git\nx"}},
		{"LF in project name", "POST", u + "/projects", map[string]string{"name": "a\nb"}},
		{"NUL in project name", "POST", u + "/projects", map[string]string{"name": "a\x00b"}},
		{"upper case project name", "POST", u + "/projects", map[string]string{"name": "Web"}},
		{"dot in project name", "POST", u + "/projects", map[string]string{"name": "a.b"}},
		{"tab in agent name", "POST", u + "/agents", map[string]any{"name": "a\tb", "project": "default", "command": []string{"true"}}},
		{"ESC in agent name", "POST", u + "/agents", map[string]any{"name": "a\x1b[31m", "project": "default", "command": []string{"true"}}},
		{"CR in token name", "POST", u + "/auth/tokens", map[string]any{"name": "t\r", "scopes": []string{"project:read"}}},
		{"path as profile on create agent", "POST", u + "/agents", map[string]any{"name": "p", "project": "default", "profile": "../../etc", "command": []string{"true"}}},
		{"path as active profile on create project", "POST", u + "/projects", map[string]string{"name": "prof", "activeProfile": "../../etc"}},
		{"path as active profile on update", "PATCH", u + "/projects/default", map[string]string{"activeProfile": "../../etc"}},
		{"garbage agents cursor", "GET", u + "/agents?cursor=garbage", nil},
		{"garbage projects cursor", "GET", u + "/projects?cursor=garbage", nil},
		{"garbage brokers cursor", "GET", u + "/runtime-brokers?cursor=garbage", nil},
		{"cursor of a non-ID", "GET", u + "/projects?cursor=" + store.EncodeCursor("a b\n"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := storedState(t, e.Store)
			var body []byte
			ct := ""
			if tc.body != nil {
				body, ct = jsonBody(t, tc.body), "application/json"
			}
			status, ae := call(t, tc.method, tc.url, e.AdminToken, ct, body)
			if status != http.StatusBadRequest || ae == nil || ae.Code != api.CodeInvalidRequest {
				t.Fatalf("got %d %+v, want 400 %s", status, ae, api.CodeInvalidRequest)
			}
			if len(ae.Message) > 400 || strings.ContainsAny(ae.Message, "\r\n\x00\x1b") {
				t.Fatalf("message echoes the input raw or whole: %q", ae.Message)
			}
			if after := storedState(t, e.Store); after != before {
				t.Fatalf("a refused request changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}

	// What the API answers is still what was set.
	lim, err := e.Admin.GetLimits(ctx)
	if err != nil || lim.MaxAgentsPerBroker != 7 {
		t.Fatalf("limits %+v, %v; want 7", lim, err)
	}
	set, err := e.Admin.GetSettings(ctx)
	if err != nil || set.AgentDefaults.DefaultHarness != "generic" || set.AgentDefaults.DefaultImage != "busybox:1" {
		t.Fatalf("settings %+v, %v", set, err)
	}
	p, err := e.Admin.GetProject(ctx, "default")
	if err != nil || p.GitRemote != remote || p.ActiveProfile != "" {
		t.Fatalf("default project %+v, %v", p, err)
	}
}

// The refusals above leave good input alone: a cursor a list returned
// still pages, 0 still means unlimited when it is said, and a valid
// default harness and git remote are taken.
func TestValidInputStillAccepted(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	for _, n := range []string{"p1", "p2", "p3"} {
		if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: n, GitRemote: "git@github.com:team/" + n + ".git", ActiveProfile: "gpu-large"}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	cursor := ""
	for range 10 {
		page, err := e.Admin.ListProjects(ctx, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Items {
			seen = append(seen, p.Name)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"default", "p1", "p2", "p3"}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("paged through %v, want %v", seen, want)
	}
	l, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 0})
	if err != nil || l.MaxAgentsPerBroker != 0 {
		t.Fatalf("explicit 0 (unlimited): %+v, %v", l, err)
	}
	if _, err := e.Admin.PutSettings(ctx, api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultHarness: "claude"}}); err != nil {
		t.Fatal(err)
	}
}
