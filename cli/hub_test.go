package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/fakeclock"
	"github.com/scion-go/scion/internal/testenv"
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
	e := newHub(t, testenv.Options{})
	mustRun(t, "hub", "add", "team", e.URL, "--use")

	r := runCLI(t, "", "hub", "auth", "login", "--token", "bad")
	if r.code != 1 || r.err != "error: unauthorized: invalid or expired token\n" {
		t.Errorf("bad token: %+v", r)
	}
	if l, _ := config.LoadHubList(); l.Hubs["team"].Token != "" {
		t.Error("a refused token was stored")
	}
	// Not signed in, the Hub refuses the commands.
	if r := runCLI(t, "", "hub", "brokers"); r.code != 1 || !strings.HasPrefix(r.err, "error: unauthorized: ") {
		t.Errorf("brokers before sign-in: %+v", r)
	}
	// From standard input.
	r = runCLI(t, e.AdminToken+"\n", "hub", "auth", "login")
	if r.code != 0 || !strings.Contains(r.out, "Signed in to team as user admin") {
		t.Fatalf("login: %+v", r)
	}
	if l, _ := config.LoadHubList(); l.Hubs["team"].Token != e.AdminToken {
		t.Error("token not stored")
	}
	// Later commands use it: the Hub answers them.
	if r := mustRun(t, "hub", "brokers", "-o", "json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("brokers after sign-in: %q", r.out)
	}

	setHome(t)
	if r := runCLI(t, "", "hub", "auth", "login", "--token", "x"); r.code != 1 || !strings.Contains(r.err, "scion hub add") {
		t.Errorf("no current hub: %+v", r)
	}
}

func TestHubBrokersTableAndJSON(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	ctx := context.Background()
	laptop := e.AddBroker("laptop")
	registerBroker(t, e, "vm") // never started: offline
	k8s := e.AddBroker("k8s")
	limit := func(id string, n int) {
		if _, err := e.Admin.UpdateBroker(ctx, id, api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &n}}); err != nil {
			t.Fatal(err)
		}
	}
	limit(laptop.ID, 0)
	limit(brokerID(t, e, "vm"), 10)
	for b, n := range map[*testenv.Broker]int{laptop: 2, k8s: 5} {
		if _, err := e.Admin.ProvideProject(ctx, b.ID, "default"); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: fmt.Sprintf("%s-%d", b.Name, i), Project: "default",
				Broker: b.Name, Start: true, Command: []string{"x"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	useHub(t, "team", e.URL, e.AdminToken)

	r := mustRun(t, "hub", "brokers")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header + 3 rows:\n%s", r.out)
	}
	for _, w := range []string{"NAME", "ID", "STATUS", "TARGET", "RUNNING", "LIMIT", "AUTO-PROVIDE", "PROJECTS"} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("header lacks %s: %s", w, lines[0])
		}
	}
	rows := map[string]string{}
	for _, l := range lines[1:] {
		rows[strings.Fields(l)[0]] = strings.Join(strings.Fields(l), " ")
	}
	for name, want := range map[string]string{
		"laptop": "laptop " + laptop.ID + " online - 2 unlimited no 1",
		"vm":     "vm " + brokerID(t, e, "vm") + " offline - 0 10 no 0",
		"k8s":    "k8s " + k8s.ID + " online - 5 100 no 1",
	} {
		if rows[name] != want {
			t.Errorf("row %q, want %q", rows[name], want)
		}
	}

	r = mustRun(t, "hub", "brokers", "-o", "json")
	var bs []map[string]any
	if err := json.Unmarshal([]byte(r.out), &bs); err != nil || len(bs) != 3 {
		t.Fatalf("json array of 3 brokers: %v\n%s", err, r.out)
	}
	byName := map[string]map[string]any{}
	for _, b := range bs {
		byName[b["name"].(string)] = b
	}
	if b := byName["laptop"]; b["effectiveMaxAgents"] != float64(0) || b["runningAgents"] != float64(2) || b["status"] != "online" {
		t.Errorf("json %v", b)
	}
	if b := byName["vm"]; b["effectiveMaxAgents"] != float64(10) || b["status"] != "offline" {
		t.Errorf("json %v", b)
	}
}

// The printed join token is made for the name and lasts the --ttl: it
// joins a broker under that name within the TTL and not after it (on the
// Hub's clock, advanced past it).
func TestJoinTokenCreate(t *testing.T) {
	setHome(t)
	clock := fakeclock.New(time.Now())
	e := newHub(t, testenv.Options{Now: clock.Now})
	useHub(t, "team", e.URL, e.AdminToken)
	var toks []string
	for range 2 {
		r := mustRun(t, "hub", "brokers", "join-token", "create", "--name", "gpu", "--ttl", "30m")
		if !strings.HasSuffix(r.out, "\n") || strings.Count(r.out, "\n") != 1 || !strings.Contains(r.err, "shown only once") {
			t.Fatalf("%+v", r)
		}
		toks = append(toks, strings.TrimSpace(r.out))
	}
	ctx := context.Background()
	anon := client.New(e.URL, "")
	clock.Advance(30*time.Minute - time.Second)
	c, err := anon.JoinBroker(ctx, toks[0], "other")
	if err != nil || c.Name != "gpu" {
		t.Fatalf("join within the TTL: %+v, %v; want broker gpu", c, err)
	}
	// The name free again, the second token is refused for its age alone.
	if err := e.Admin.DeregisterBroker(ctx, c.BrokerID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if _, err := anon.JoinBroker(ctx, toks[1], "gpu"); !api.IsCode(err, api.CodeUnauthorized) {
		t.Fatalf("join past the TTL: %v, want unauthorized", err)
	}
}

func TestHubSettingsAndLimits(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	vm := registerBroker(t, e, "vm")
	useHub(t, "team", e.URL, e.AdminToken)
	ctx := context.Background()
	cur, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur.AgentDefaults.DefaultImage = "img:1"
	if _, err := e.Admin.PutSettings(ctx, *cur); err != nil {
		t.Fatal(err)
	}

	// The Hub keeps the broker by ID.
	r := mustRun(t, "hub", "settings", "set", "--default-runtime-broker", "vm")
	if !strings.Contains(r.out, "default_runtime_broker: "+vm) {
		t.Errorf("%s", r.out)
	}
	// The PUT kept the fields that were not set.
	if got, err := e.Admin.GetSettings(ctx); err != nil || got.AgentDefaults.DefaultImage != "img:1" || got.AgentDefaults.DefaultRuntimeBroker != vm {
		t.Errorf("settings %+v, %v", got, err)
	}
	r = mustRun(t, "hub", "settings", "get", "-o", "json")
	if !strings.Contains(r.out, `"default_runtime_broker": "`+vm+`"`) || !strings.Contains(r.out, `"img:1"`) {
		t.Errorf("%s", r.out)
	}

	mustRun(t, "hub", "limits", "set", "--max-agents-per-broker", "0")
	if l, err := e.Admin.GetLimits(ctx); err != nil || l.MaxAgentsPerBroker != 0 {
		t.Errorf("limits %+v, %v", l, err)
	}
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
// token, ahead of the hub list; --hub still wins. Three real Hubs, each
// with agents of its own in projects default and web: the one `scion list`
// shows names the Hub (and the credential and project) it used.
func TestHubResolutionOrderEndToEnd(t *testing.T) {
	setHome(t)
	ctx := context.Background()
	hubWith := func(agent string) *testenv.Env {
		e := newHub(t, testenv.Options{Brokers: 1})
		if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "web"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Admin.ProvideProject(ctx, e.Brokers()[0].ID, "web"); err != nil {
			t.Fatal(err)
		}
		for name, project := range map[string]string{agent: "default", agent + "-web": "web"} {
			if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: project, Start: true, Command: []string{"x"}}); err != nil {
				t.Fatal(err)
			}
		}
		return e
	}
	listed := func(args ...string) string {
		t.Helper()
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(mustRun(t, append([]string{"list"}, args...)...).out), "\n")[1:] {
			names = append(names, strings.Join(strings.Fields(l)[:2], "/"))
		}
		return strings.Join(names, ",")
	}
	listHub, envHub, wsHub := hubWith("on-list"), hubWith("on-env"), hubWith("on-ws")
	writeWorkstation(t, wsHub.URL, wsHub.AdminToken, "")
	if got := listed(); got != "on-ws/default" {
		t.Errorf("with only a workstation: list shows %q, want the workstation Hub's on-ws", got)
	}

	useHub(t, "team", listHub.URL, listHub.AdminToken)
	if got := listed(); got != "on-list/default" {
		t.Errorf("with a current hub: list shows %q, want the hub list's on-list", got)
	}

	a, err := envHub.Admin.GetAgent(ctx, "on-env-web", "web")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCION_HUB_URL", envHub.URL)
	t.Setenv("SCION_AGENT_TOKEN", agentTokenOf(t, envHub, a.ID))
	t.Setenv("SCION_PROJECT", "web")
	if got := listed(); got != "on-env-web/web" {
		t.Errorf("in an agent's environment: list shows %q, want the environment Hub's on-env-web in project web", got)
	}

	if got := listed("--hub", "team"); got != "on-list-web/web" {
		t.Errorf("--hub team: list shows %q, want the hub list's on-list-web (project web from the environment)", got)
	}
}

// agentTokenOf is the token the Hub gave the agent, read from its
// environment.
func agentTokenOf(t *testing.T, e *testenv.Env, agentID string) string {
	t.Helper()
	var out bytes.Buffer
	if _, err := e.Admin.Exec(context.Background(), agentID, "", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String())
}
