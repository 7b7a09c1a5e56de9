package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// TestCompletionFromALiveHub: cobra's __complete (what the shell scripts
// of 'scion completion' call) completes agent, project, broker and hub
// names from the Hub and the hub list.
func TestCompletionFromALiveHub(t *testing.T) {
	setHome(t)
	agentHub(t)
	mustRun(t, "start", "fixer", "--project", "web", "--broker", "vm", "--", "x")
	mustRun(t, "start", "finder", "--project", "web", "--broker", "vm", "--", "x")
	mustRun(t, "start", "other", "--broker", "vm", "--", "x")

	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"stop", "--project", "web", "fi"}, []string{"fixer\trunning", "finder\trunning"}, []string{"other"}},
		{[]string{"delete", ""}, []string{"other"}, []string{"fixer"}},
		{[]string{"logs", "--project", "web", "fix"}, []string{"fixer"}, []string{"finder"}},
		{[]string{"list", "--project", "w"}, []string{"web"}, []string{"api"}},
		{[]string{"start", "x", "--broker", "l"}, []string{"laptop\tonline"}, []string{"vm"}},
		{[]string{"hub", "use", ""}, []string{"team\t"}, nil},
		{[]string{"project", "show", ""}, []string{"web", "api", "default"}, nil},
	} {
		r := mustRun(t, append([]string{"__complete"}, tc.args...)...)
		for _, w := range tc.want {
			if !strings.Contains(r.out, w) {
				t.Errorf("__complete %q: %q missing from:\n%s", tc.args, w, r.out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(r.out, n) {
				t.Errorf("__complete %q: %q offered:\n%s", tc.args, n, r.out)
			}
		}
		if !strings.Contains(r.out, ":4\n") { // ShellCompDirectiveNoFileComp
			t.Errorf("__complete %q: file names offered too:\n%s", tc.args, r.out)
		}
	}
	// The scripts themselves.
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := mustRun(t, "completion", sh); !strings.Contains(r.out, "__complete") {
			t.Errorf("completion %s: no script:\n%.300s", sh, r.out)
		}
	}
}

// TestCompletionWithoutAHubIsQuiet: no Hub, no names and no error text.
func TestCompletionWithoutAHubIsQuiet(t *testing.T) {
	setHome(t)
	r := mustRun(t, "__complete", "stop", "")
	if strings.Contains(r.out, "error") || !strings.HasPrefix(r.out, ":4") {
		t.Fatalf("completion without a Hub: %q", r.out)
	}
}

func TestSeveralNamesAndAll(t *testing.T) {
	setHome(t)
	e := agentHub(t)
	ctx := context.Background()
	for _, n := range []string{"a1", "a2", "a3"} {
		mustRun(t, "start", n, "--project", "web", "--broker", "vm", "--", "x")
	}
	// Two named, one of them missing: the other is stopped, the missing
	// one reported, exit 1.
	r := runCLI(t, "", "stop", "a1", "ghost", "a2", "--project", "web")
	if r.code != 1 || !strings.Contains(r.err, "ghost: error: agent_not_found") || !strings.Contains(r.err, "1 of 3 failed: ghost") {
		t.Fatalf("stop a1 ghost a2: %+v", r)
	}
	for _, n := range []string{"a1", "a2"} {
		if a, _ := e.Admin.GetAgent(ctx, n, "web"); a.Phase != api.PhaseStopped || !strings.Contains(r.out, n) {
			t.Errorf("%s: %s after the stop; table:\n%s", n, a.Phase, r.out)
		}
	}
	r = mustRun(t, "stop", "--all", "--project", "web", "-o", "json")
	var stopped []api.Agent
	if err := json.Unmarshal([]byte(r.out), &stopped); err != nil || len(stopped) != 3 {
		t.Fatalf("stop --all -o json: %v %s", err, r.out)
	}
	r = mustRun(t, "delete", "--all", "--project", "web", "-o", "json")
	var deleted []deletedView
	if err := json.Unmarshal([]byte(r.out), &deleted); err != nil || len(deleted) != 3 || !deleted[0].Deleted || deleted[0].Project != "web" {
		t.Fatalf("delete --all -o json: %v %s", err, r.out)
	}
	if ags, _ := e.Admin.ListAllAgents(ctx, client.AgentFilter{Project: "web"}); len(ags) != 0 {
		t.Fatalf("%d agents left in web", len(ags))
	}
	for _, args := range [][]string{{"delete"}, {"stop", "x", "--all"}, {"delete", "--all", "x"}} {
		if r := runCLI(t, "", args...); r.code != exitUsage || !strings.Contains(r.err, "--all") {
			t.Errorf("%q: %+v, want a usage error naming --all", args, r)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	setHome(t)
	for args, want := range map[string]string{
		"stpo": `did you mean "stop"?`, "hub brokrs": `did you mean "brokers"?`, "projct list": `did you mean "project"?`,
	} {
		r := runCLI(t, "", strings.Fields(args)...)
		if r.code != exitUsage || !strings.Contains(r.err, want) {
			t.Errorf("scion %s: %+v, want %s", args, r, want)
		}
	}
}

// TestErrorsAsJSONUnderStructuredOutput: with -o json (or yaml, ...) an
// error is one JSON object on stderr with the Hub's code and the
// answer's request ID; a usage error says so with exit 2.
func TestErrorsAsJSONUnderStructuredOutput(t *testing.T) {
	setHome(t)
	agentHub(t)
	for _, o := range []string{"json", "yaml"} {
		r := runCLI(t, "", "stop", "ghost", "-o", o)
		var e struct{ Error errorView }
		if err := json.Unmarshal([]byte(r.err), &e); err != nil || r.code != 1 || e.Error.Code != api.CodeAgentNotFound ||
			e.Error.Status != 404 || len(e.Error.RequestID) != 24 || e.Error.ExitCode != 1 || r.out != "" {
			t.Errorf("-o %s: %+v (%v) from %+v", o, e, err, r)
		}
	}
	r := runCLI(t, "", "list", "-o", "json", "--nope")
	var e struct{ Error errorView }
	if err := json.Unmarshal([]byte(r.err), &e); err != nil || r.code != exitUsage || e.Error.Code != api.CodeInvalidRequest || e.Error.ExitCode != exitUsage {
		t.Errorf("usage error: %+v (%v) from %+v", e, err, r)
	}
}

func TestVersionShowsTheHubs(t *testing.T) {
	setHome(t)
	if r := mustRun(t, "--version"); r.out != "scion "+Version+"\n" {
		t.Errorf("--version: %q", r.out)
	}
	if r := mustRun(t, "version"); !strings.Contains(r.out, "CLI: "+Version) || !strings.Contains(r.out, "Hub: none selected") {
		t.Errorf("version without a Hub: %q", r.out)
	}
	e := agentHub(t)
	r := mustRun(t, "version", "-o", "json")
	var v versionView
	if err := json.Unmarshal([]byte(r.out), &v); err != nil || v.CLI.Version != Version || v.Hub == nil || v.Hub.Version != "test" || v.Hub.URL != e.URL {
		t.Errorf("version -o json: %v %s", err, r.out)
	}
	if r := mustRun(t, "version"); !strings.Contains(r.out, "Hub: test ("+e.URL+")") {
		t.Errorf("version: %q", r.out)
	}
}

// TestListWatch: list -w prints the list, then a line for each change of
// its project's agents as the Hub's feed tells it (another project's
// never), until interrupted; -o json -w prints one object per line.
func TestListWatch(t *testing.T) {
	setHome(t)
	e := agentHub(t)
	ctx := context.Background()
	mustRun(t, "start", "before", "--project", "web", "--broker", "vm", "--", "x")
	for _, o := range []string{"table", "json"} {
		var screen syncBuf
		root := NewRoot(Daemons{})
		root.SetArgs([]string{"list", "-w", "--project", "web", "-o", o})
		root.SetOut(&screen)
		root.SetErr(&screen)
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan int, 1)
		go func() { done <- run(wctx, root) }()
		waitScreen := func(what string, ok func(string) bool) {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if ok(screen.String()) {
					return
				}
			}
			t.Fatalf("-o %s: %s; printed:\n%s", o, what, screen.String())
		}
		waitScreen("the list first", func(s string) bool { return strings.Contains(s, "before") })
		name := "w-" + o
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "web", Broker: "vm", Start: true, Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "elsewhere-" + o, Project: "api", Broker: "vm", Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
		waitScreen("the new agent running", func(s string) bool {
			for _, l := range strings.Split(s, "\n") {
				if strings.Contains(l, name) && strings.Contains(l, "running") {
					return true
				}
			}
			return false
		})
		if err := e.Admin.DeleteAgent(ctx, name, "web"); err != nil {
			t.Fatal(err)
		}
		waitScreen("the agent deleted", func(s string) bool {
			for _, l := range strings.Split(s, "\n") {
				if strings.Contains(l, name) && strings.Contains(l, "deleted") {
					return true
				}
			}
			return false
		})
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("-o %s: list -w ended with exit %d:\n%s", o, code, screen.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("-o %s: list -w did not end when interrupted", o)
		}
		out := screen.String()
		if strings.Contains(out, "elsewhere-") {
			t.Errorf("-o %s: another project's agent was printed:\n%s", o, out)
		}
		if o == "json" {
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				var ag api.Agent
				if err := json.Unmarshal([]byte(l), &ag); err != nil || ag.Slug == "" {
					t.Errorf("-o json -w line %q: %v", l, err)
				}
			}
		}
	}
}

// TestHubBrokersWatch: hub brokers -w prints a broker's row again when it
// goes offline.
func TestHubBrokersWatch(t *testing.T) {
	setHome(t)
	e := agentHub(t)
	var screen syncBuf
	root := NewRoot(Daemons{})
	root.SetArgs([]string{"hub", "brokers", "-w"})
	root.SetOut(&screen)
	root.SetErr(&screen)
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(wctx, root) }()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(screen.String(), "laptop") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	var laptop *testenvBroker
	for _, b := range e.Brokers() {
		if b.Name == "laptop" {
			laptop = &testenvBroker{id: b.ID}
			e.StopBroker(b)
		}
	}
	if laptop == nil {
		t.Fatal("no broker laptop")
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range strings.Split(screen.String(), "\n") {
			if strings.Contains(l, "laptop") && strings.Contains(l, "offline") {
				cancel()
				if code := <-done; code != 0 {
					t.Fatalf("exit %d", code)
				}
				return
			}
		}
	}
	t.Fatalf("laptop offline never printed:\n%s", screen.String())
}

type testenvBroker struct{ id string }

// TestDescribe: describe agent shows the record and the events its
// records tell (created, each generation, the last change), oldest
// first; describe broker and project count agents by phase.
func TestDescribe(t *testing.T) {
	setHome(t)
	agentHub(t)
	mustRun(t, "start", "d1", "--project", "web", "--broker", "vm", "--", "x")
	mustRun(t, "stop", "d1", "--project", "web")
	mustRun(t, "reincarnate", "d1", "--project", "web")
	r := mustRun(t, "describe", "agent", "d1", "--project", "web")
	for _, want := range []string{"Name:", "d1", "Broker:", "vm", "Generation:", "2", "Events:", "created", "generation 1", "generation 2", "last change"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("describe agent lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Index(r.out, "generation 1") > strings.Index(r.out, "generation 2") {
		t.Errorf("events not oldest first:\n%s", r.out)
	}
	if r := mustRun(t, "describe", "broker", "vm"); !strings.Contains(r.out, "Agents:") || !strings.Contains(r.out, "1 running") {
		t.Errorf("describe broker:\n%s", r.out)
	}
	if r := mustRun(t, "describe", "project", "web"); !strings.Contains(r.out, "1 running") || !strings.Contains(r.out, "agent d1 created") {
		t.Errorf("describe project:\n%s", r.out)
	}
	if r := runCLI(t, "", "describe", "agent", "ghost"); r.code != 1 || !strings.Contains(r.err, "agent_not_found") {
		t.Errorf("describe a missing agent: %+v", r)
	}
}
