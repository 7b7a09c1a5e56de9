package hubconn

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/config"
)

func TestResolveHub(t *testing.T) {
	hubs := &config.HubList{Current: "team", Hubs: map[string]*config.HubEntry{
		"team": {URL: "https://team.example.com/", Token: "team-tok"},
		"lab":  {URL: "http://lab:8080", Token: "lab-tok"},
		"anon": {URL: "http://127.0.0.1:7411"},
	}}
	noCurrent := &config.HubList{Hubs: hubs.Hubs}
	// Two sign-ins to one Hub: an admin one and a read-only entry that
	// has not signed in yet.
	shared := &config.HubList{Hubs: map[string]*config.HubEntry{
		"admin": {URL: "http://hub:1", Token: "admin-tok"},
		"ro":    {URL: "http://hub:1/"},
	}}
	sharedRO := &config.HubList{Current: "ro", Hubs: shared.Hubs}
	empty := &config.HubList{Hubs: map[string]*config.HubEntry{}}
	danglingCurrent := &config.HubList{Current: "gone", Hubs: map[string]*config.HubEntry{}}
	ws := &config.Workstation{URL: "http://127.0.0.1:7411", AdminToken: "admin-tok"}
	agentEnv := map[string]string{"SCION_HUB_ENDPOINT": "http://hub.internal:9000", "SCION_HUB_URL": "http://other:1", "SCION_AGENT_TOKEN": "agent-tok"}

	cases := []struct {
		name    string
		flag    string
		env     map[string]string
		hubs    *config.HubList
		ws      *config.Workstation
		wantURL string
		wantTok string
		wantSrc string
		wantErr string
	}{
		{name: "flag nickname beats everything", flag: "lab", env: agentEnv, hubs: hubs, ws: ws,
			wantURL: "http://lab:8080", wantTok: "lab-tok", wantSrc: sourceFlag},
		{name: "flag URL in list takes the entry's token", flag: "https://team.example.com", hubs: hubs,
			wantURL: "https://team.example.com", wantTok: "team-tok", wantSrc: sourceFlag},
		{name: "flag bare URL has no token", flag: "https://elsewhere.example.com/", hubs: hubs,
			wantURL: "https://elsewhere.example.com", wantTok: "", wantSrc: sourceFlag},
		{name: "flag URL of the workstation takes its admin token", flag: "http://127.0.0.1:7411/", hubs: empty, ws: ws,
			wantURL: "http://127.0.0.1:7411", wantTok: "admin-tok", wantSrc: sourceFlag},
		// An entry that is not signed in uses no token, not the
		// workstation's admin token (issue 12, item 8).
		{name: "flag entry without token on workstation URL uses none", flag: "anon", hubs: hubs, ws: ws,
			wantURL: "http://127.0.0.1:7411", wantTok: "", wantSrc: sourceFlag},
		{name: "flag entry without token does not borrow a same-URL entry's", flag: "ro", hubs: shared,
			wantURL: "http://hub:1", wantTok: "", wantSrc: sourceFlag},
		{name: "current entry without token does not borrow a same-URL entry's", hubs: sharedRO,
			wantURL: "http://hub:1", wantTok: "", wantSrc: sourceHubList},
		{name: "flag URL shared by entries takes the first by name", flag: "http://hub:1/", hubs: shared,
			wantURL: "http://hub:1", wantTok: "admin-tok", wantSrc: sourceFlag},
		{name: "flag URL of the env hub takes the agent token", flag: "http://hub.internal:9000", env: agentEnv, hubs: empty,
			wantURL: "http://hub.internal:9000", wantTok: "agent-tok", wantSrc: sourceFlag},
		{name: "flag unknown nickname", flag: "nope", hubs: hubs, wantErr: `unknown hub "nope"`},
		{name: "SCION_HUB_ENDPOINT beats SCION_HUB_URL and the list", env: agentEnv, hubs: hubs, ws: ws,
			wantURL: "http://hub.internal:9000", wantTok: "agent-tok", wantSrc: "SCION_HUB_ENDPOINT"},
		{name: "SCION_HUB_URL when no endpoint", env: map[string]string{"SCION_HUB_URL": "http://other:1/", "SCION_AGENT_TOKEN": "agent-tok"}, hubs: hubs,
			wantURL: "http://other:1", wantTok: "agent-tok", wantSrc: "SCION_HUB_URL"},
		{name: "env hub without agent token falls back to list token", env: map[string]string{"SCION_HUB_URL": "http://lab:8080"}, hubs: hubs,
			wantURL: "http://lab:8080", wantTok: "lab-tok", wantSrc: "SCION_HUB_URL"},
		{name: "bad env URL", env: map[string]string{"SCION_HUB_ENDPOINT": "hub:9000"}, hubs: hubs, wantErr: "SCION_HUB_ENDPOINT"},
		{name: "current hub of the list beats workstation", hubs: hubs, ws: ws,
			wantURL: "https://team.example.com", wantTok: "team-tok", wantSrc: sourceHubList},
		{name: "dangling current hub", hubs: danglingCurrent, ws: ws, wantErr: `current hub "gone"`},
		{name: "workstation when nothing else", hubs: noCurrent, ws: ws,
			wantURL: "http://127.0.0.1:7411", wantTok: "admin-tok", wantSrc: sourceWorkstation},
		{name: "nothing at all", hubs: empty, wantErr: "scion server start --workstation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(Inputs{Flag: tc.flag, Getenv: func(k string) string { return tc.env[k] }, Hubs: tc.hubs, Workstation: tc.ws})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.URL != tc.wantURL || got.Token != tc.wantTok || got.Source != tc.wantSrc {
				t.Errorf("got %+v, want url %q token %q source %q", got, tc.wantURL, tc.wantTok, tc.wantSrc)
			}
		})
	}
}

func TestNoHubMessageNamesBothWays(t *testing.T) {
	msg := ErrNoHub.Error()
	for _, want := range []string{"scion server start --workstation", "scion hub add"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not mention %q", msg, want)
		}
	}
}
