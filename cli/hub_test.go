package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scion-go/scion/config"
)

func TestHubAddUseList(t *testing.T) {
	setHome(t)
	mustRun(t, "hub", "add", "team", "https://team.example.com/")
	mustRun(t, "hub", "add", "lab", "http://lab:8080", "--use", "--token", "T")

	l, _ := config.LoadHubList()
	if l.Current != "lab" || l.Hubs["team"].URL != "https://team.example.com" || l.Hubs["lab"].Token != "T" {
		t.Fatalf("hub list %+v", l)
	}
	r := mustRun(t, "hub", "list")
	if !strings.Contains(r.out, "*        lab") || strings.Contains(r.out, "*        team") {
		t.Errorf("list does not mark lab current:\n%s", r.out)
	}

	mustRun(t, "hub", "use", "team")
	r = mustRun(t, "hub", "list", "-o", "json")
	var items []hubListItem
	if err := json.Unmarshal([]byte(r.out), &items); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if len(items) != 2 || items[0].Name != "lab" || items[0].Current || !items[0].SignedIn || !items[1].Current {
		t.Errorf("json %+v", items)
	}
	if strings.Contains(r.out, `"T"`) {
		t.Error("hub list -o json printed a token")
	}

	// Re-adding the same URL keeps the token; a different URL drops it.
	mustRun(t, "hub", "add", "lab", "http://lab:8080/")
	if l, _ := config.LoadHubList(); l.Hubs["lab"].Token != "T" {
		t.Error("re-add of the same URL dropped the token")
	}
	r = runCLI(t, "", "hub", "use", "nope")
	if r.code != 1 || !strings.Contains(r.err, `no hub "nope"`) {
		t.Errorf("use unknown: %+v", r)
	}
}

func TestHubAuthLogin(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "good")
	mustRun(t, "hub", "add", "team", h.URL, "--use")

	r := runCLI(t, "", "hub", "auth", "login", "--token", "bad")
	if r.code != 1 || r.err != "error: unauthorized: bad or missing token\n" {
		t.Errorf("bad token: %+v", r)
	}
	if l, _ := config.LoadHubList(); l.Hubs["team"].Token != "" {
		t.Error("a refused token was stored")
	}
	// From standard input.
	r = runCLI(t, "good\n", "hub", "auth", "login")
	if r.code != 0 || !strings.Contains(r.out, "Signed in to team as user alice") {
		t.Fatalf("login: %+v", r)
	}
	if l, _ := config.LoadHubList(); l.Hubs["team"].Token != "good" {
		t.Error("token not stored")
	}
	// Later commands use it.
	mustRun(t, "hub", "brokers")
	if got := h.requests("GET", "/api/v1/runtime-brokers"); got[len(got)-1].Auth != "Bearer good" {
		t.Errorf("auth %q", got[len(got)-1].Auth)
	}

	setHome(t)
	if r := runCLI(t, "", "hub", "auth", "login", "--token", "x"); r.code != 1 || !strings.Contains(r.err, "scion hub add") {
		t.Errorf("no current hub: %+v", r)
	}
}

func TestHubBrokersTableAndJSON(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	h.addBroker("laptop", "online", 2, 0)
	h.addBroker("vm", "offline", 0, 10)
	h.addBroker("k8s", "online", 5, 100) // third broker: a second page
	useHub(t, "team", h, "tok")

	r := mustRun(t, "hub", "brokers")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header + 3 rows (all pages):\n%s", r.out)
	}
	for _, w := range []string{"NAME", "ID", "STATUS", "RUNNING", "LIMIT", "AUTO-PROVIDE", "PROJECTS"} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("header lacks %s: %s", w, lines[0])
		}
	}
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != "laptop b-1 online 2 unlimited no 0" {
		t.Errorf("row %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[2] != "offline" || f[4] != "10" {
		t.Errorf("row %q", lines[2])
	}

	r = mustRun(t, "hub", "brokers", "-o", "json")
	var bs []map[string]any
	if err := json.Unmarshal([]byte(r.out), &bs); err != nil || len(bs) != 3 {
		t.Fatalf("json array of 3 brokers: %v\n%s", err, r.out)
	}
	if bs[0]["name"] != "laptop" || bs[0]["effectiveMaxAgents"] != float64(0) {
		t.Errorf("json %v", bs[0])
	}
}

func TestJoinTokenCreate(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	r := mustRun(t, "hub", "brokers", "join-token", "create", "--name", "gpu", "--ttl", "30m")
	if r.out != "jt-new\n" || !strings.Contains(r.err, "shown only once") {
		t.Errorf("%+v", r)
	}
	if b := h.requests("POST", "/api/v1/runtime-brokers/join-tokens")[0].Body; b["name"] != "gpu" || b["ttl"] != "30m0s" {
		t.Errorf("body %v", b)
	}
}

func TestHubSettingsAndLimits(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	h.settings.AgentDefaults.DefaultImage = "img:1"

	r := mustRun(t, "hub", "settings", "set", "--default-runtime-broker", "vm")
	if !strings.Contains(r.out, "default_runtime_broker: vm") {
		t.Errorf("%s", r.out)
	}
	// The PUT kept the fields that were not set.
	if h.settings.AgentDefaults.DefaultImage != "img:1" || h.settings.AgentDefaults.DefaultRuntimeBroker != "vm" {
		t.Errorf("settings %+v", h.settings)
	}
	r = mustRun(t, "hub", "settings", "get", "-o", "json")
	if !strings.Contains(r.out, `"default_runtime_broker": "vm"`) {
		t.Errorf("%s", r.out)
	}

	mustRun(t, "hub", "limits", "set", "--max-agents-per-broker", "0")
	r = mustRun(t, "hub", "limits", "get")
	if strings.TrimSpace(r.out) != "max_agents_per_broker: unlimited" {
		t.Errorf("%q", r.out)
	}
	r = mustRun(t, "hub", "limits", "get", "-o", "json")
	if !strings.Contains(r.out, `"max_agents_per_broker": 0`) {
		t.Errorf("%s", r.out)
	}
}

// Inside an agent container the environment selects the Hub and the agent
// token, ahead of the hub list; --hub still wins.
func TestHubResolutionOrderEndToEnd(t *testing.T) {
	setHome(t)
	listHub := newFakeHub(t, "")
	envHub := newFakeHub(t, "")
	wsHub := newFakeHub(t, "")
	writeWorkstation(t, wsHub.URL, "admin-tok", "")

	mustRun(t, "list")
	if got := wsHub.requests("GET", "/api/v1/agents"); len(got) != 1 || got[0].Auth != "Bearer admin-tok" {
		t.Errorf("workstation hub not used: %+v", got)
	}

	useHub(t, "team", listHub, "list-tok")
	mustRun(t, "list")
	if got := listHub.requests("GET", "/api/v1/agents"); len(got) != 1 || got[0].Auth != "Bearer list-tok" {
		t.Errorf("hub list not used: %+v", got)
	}

	t.Setenv("SCION_HUB_URL", envHub.URL)
	t.Setenv("SCION_AGENT_TOKEN", "agent-tok")
	t.Setenv("SCION_PROJECT", "web")
	mustRun(t, "list")
	got := envHub.requests("GET", "/api/v1/agents")
	if len(got) != 1 || got[0].Auth != "Bearer agent-tok" || !strings.Contains(got[0].Query, "project=web") {
		t.Errorf("env hub not used: %+v", got)
	}

	mustRun(t, "list", "--hub", "team")
	if got := listHub.requests("GET", "/api/v1/agents"); len(got) != 2 {
		t.Errorf("--hub did not win over the environment")
	}
}
