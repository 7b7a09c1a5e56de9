package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

func TestProjectCommands(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	vm := registerBroker(t, e, "vm")
	useHub(t, "team", e.URL, e.AdminToken)
	ctx := context.Background()

	r := mustRun(t, "project", "create", "web", "--git-remote", "https://g/web.git", "--sharing-mode", "clone-per-agent", "--default-broker", "vm")
	if !strings.Contains(r.out, "Sharing mode:") || !strings.Contains(r.out, "clone-per-agent") {
		t.Errorf("%s", r.out)
	}
	p, err := e.Admin.GetProject(ctx, "web")
	if err != nil || p.GitRemote != "https://g/web.git" || p.SharingMode != "clone-per-agent" || p.DefaultBrokerID != vm {
		t.Fatalf("created project %+v, %v", p, err)
	}
	mustRun(t, "project", "create", "api")
	mustRun(t, "project", "create", "docs")

	r = mustRun(t, "project", "list") // with the Hub's own default project
	if n := len(strings.Split(strings.TrimSpace(r.out), "\n")); n != 5 {
		t.Errorf("want header + 4 projects:\n%s", r.out)
	}
	r = mustRun(t, "project", "list", "-o", "json")
	var ps []map[string]any
	if err := json.Unmarshal([]byte(r.out), &ps); err != nil || len(ps) != 4 {
		t.Errorf("json: %v %s", err, r.out)
	}

	// Only the flags given change the project; an empty value clears.
	mustRun(t, "project", "set", "web", "--active-profile", "k8s", "--default-broker", "")
	p, err = e.Admin.GetProject(ctx, "web")
	if err != nil || p.ActiveProfile != "k8s" || p.DefaultBrokerID != "" || p.GitRemote != "https://g/web.git" || p.SharingMode != "clone-per-agent" {
		t.Errorf("project after set %+v, %v", p, err)
	}
	r = mustRun(t, "project", "show", "web", "-o", "json")
	var pj map[string]any
	json.Unmarshal([]byte(r.out), &pj)
	if pj["activeProfile"] != "k8s" || pj["gitRemote"] != "https://g/web.git" {
		t.Errorf("show %v", pj)
	}
	r = runCLI(t, "", "project", "show", "nope")
	if r.code != 1 || r.err != "error: project_not_found: project \"nope\" not found\n" {
		t.Errorf("%+v", r)
	}
}

// agentHub is a real Hub with brokers vm and laptop (vm offers profile
// k8s) providing for projects web and api; vm alone provides for default.
func agentHub(t *testing.T) *testenv.Env {
	t.Helper()
	e := newHub(t, testenv.Options{Profiles: map[string][]wire.Profile{"vm": {{Name: "k8s", Runtime: "fake"}}}})
	ctx := context.Background()
	for _, p := range []string{"web", "api"} {
		if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: p}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"vm", "laptop"} {
		b := e.AddBroker(name)
		for _, p := range []string{"default", "web", "api"} {
			if p == "default" && name != "vm" {
				continue
			}
			if _, err := e.Admin.ProvideProject(ctx, b.ID, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	useHub(t, "team", e.URL, e.AdminToken)
	return e
}

func TestAgentCreateStartAndActions(t *testing.T) {
	setHome(t)
	e := agentHub(t)
	ctx := context.Background()
	phase := func(name, project string) string {
		t.Helper()
		a, err := e.Admin.GetAgent(ctx, name, project)
		if err != nil {
			return err.Error()
		}
		return a.Phase
	}

	r := mustRun(t, "create", "fixer", "--project", "web", "--broker", "vm", "-p", "k8s", "--env", "A=1", "--env", "B=x=y",
		"--", "claude", "-p", "fix it")
	if !strings.Contains(r.out, "fixer") || !strings.Contains(r.out, "created") {
		t.Errorf("%s", r.out)
	}
	a, err := e.Admin.GetAgent(ctx, "fixer", "web")
	if err != nil || a.BrokerName != "vm" || a.Profile != "k8s" || !slices.Equal(a.Command, []string{"claude", "-p", "fix it"}) ||
		a.Env["A"] != "1" || a.Env["B"] != "x=y" || a.Phase != api.PhaseCreated {
		t.Errorf("created agent %+v, %v", a, err)
	}

	// start on an existing agent starts it, warning about creation flags.
	r = mustRun(t, "start", "fixer", "--project", "web", "--image", "x")
	if !strings.Contains(r.err, "ignoring --image") || phase("fixer", "web") != api.PhaseRunning {
		t.Errorf("start existing: %+v, phase %s", r, phase("fixer", "web"))
	}
	// start on a missing agent creates it started, in the default project.
	r = mustRun(t, "start", "helper", "-o", "json", "--", "x")
	var ag map[string]any
	if err := json.Unmarshal([]byte(r.out), &ag); err != nil || ag["phase"] != "running" || ag["projectId"] != e.ProjectID {
		t.Errorf("json %v %s", err, r.out)
	}
	if p := phase("helper", "default"); p != api.PhaseRunning {
		t.Errorf("start new: helper in default is %s", p)
	}
	// SCION_PROJECT is the default project.
	t.Setenv("SCION_PROJECT", "web")
	for _, step := range []struct{ act, want string }{
		{"stop", api.PhaseStopped}, {"restart", api.PhaseRunning}, {"suspend", api.PhaseSuspended}, {"resume", api.PhaseRunning},
	} {
		mustRun(t, step.act, "fixer")
		if p := phase("fixer", "web"); p != step.want {
			t.Errorf("%s: fixer is %s, want %s", step.act, p, step.want)
		}
	}
	mustRun(t, "delete", "fixer")
	if _, err := e.Admin.GetAgent(ctx, "fixer", "web"); !api.IsCode(err, api.CodeAgentNotFound) {
		t.Errorf("after delete: %v, want agent_not_found", err)
	}
	r = runCLI(t, "", "stop", "ghost")
	if r.code != 1 || r.err != "error: agent_not_found: agent \"ghost\" not found\n" {
		t.Errorf("%+v", r)
	}
}

func TestAgentListAndLogs(t *testing.T) {
	setHome(t)
	e := agentHub(t)
	for _, a := range [][]string{{"a1", "web", "vm"}, {"a2", "web", "laptop"}, {"a3", "web", "vm"}, {"b1", "api", "vm"}} {
		mustRun(t, "start", a[0], "--project", a[1], "--broker", a[2], "--", "x")
	}
	r := mustRun(t, "list", "--project", "web")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "NAME PROJECT BROKER PHASE CONTAINER AGE" {
		t.Fatalf("list:\n%s", r.out)
	}
	if f := strings.Fields(lines[1]); strings.Join(f[:5], " ") != "a1 web vm running running" {
		t.Errorf("row %q", lines[1])
	}
	r = mustRun(t, "list", "--all", "--broker", "vm")
	if !strings.Contains(r.out, "b1    api") || strings.Contains(r.out, "a2") {
		t.Errorf("--all --broker vm:\n%s", r.out)
	}
	r = mustRun(t, "list", "--all", "-o", "json")
	var ags []map[string]any
	if err := json.Unmarshal([]byte(r.out), &ags); err != nil || len(ags) != 4 {
		t.Errorf("json %v %s", err, r.out)
	}
	// An empty list is an empty array, never null.
	registerBroker(t, e, "idle")
	if r := mustRun(t, "list", "--project", "web", "--broker", "idle", "-o", "json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("empty list json %q", r.out)
	}

	// The agent logged seven lines and exited: --tail 5 prints the last
	// five; -f prints what the agent logged and ends with it. (A followed
	// log of a runtime that cannot start at a tail, as the fake one, comes
	// whole: see broker.openLogs.)
	a, err := e.Admin.GetAgent(context.Background(), "a1", "web")
	if err != nil {
		t.Fatal(err)
	}
	var rt *testenv.Broker
	for _, b := range e.Brokers() {
		if b.Name == "vm" {
			rt = b
		}
	}
	var want, all strings.Builder
	for i := range 7 {
		line := fmt.Sprintf("line %d\n", i)
		if err := rt.Runtime.WriteLog(a.ID, line); err != nil {
			t.Fatal(err)
		}
		all.WriteString(line)
		if i >= 2 {
			want.WriteString(line)
		}
	}
	if err := rt.Runtime.SimulateExit(a.ID, 0); err != nil {
		t.Fatal(err)
	}
	if r = mustRun(t, "logs", "a1", "--project", "web", "--tail", "5"); r.out != want.String() {
		t.Errorf("logs --tail 5 = %q, want %q", r.out, want.String())
	}
	whole := mustRun(t, "logs", "a1", "--project", "web").out
	if !strings.HasSuffix(whole, all.String()) {
		t.Errorf("logs = %q, want it to end with the seven lines", whole)
	}
	if r = mustRun(t, "logs", "a1", "--project", "web", "-f", "--tail", "5"); r.out != whole {
		t.Errorf("logs -f --tail 5 = %q, want the whole log %q", r.out, whole)
	}
	if r = mustRun(t, "logs", "a1", "--project", "web", "--tail", "2"); r.out != "line 5\nline 6\n" {
		t.Errorf("logs --tail 2 = %q", r.out)
	}
}
