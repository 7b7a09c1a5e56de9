package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestProjectCommands(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")

	r := mustRun(t, "project", "create", "web", "--git-remote", "https://g/web.git", "--sharing-mode", "clone-per-agent", "--default-broker", "vm")
	if !strings.Contains(r.out, "Sharing mode:") || !strings.Contains(r.out, "clone-per-agent") {
		t.Errorf("%s", r.out)
	}
	body := h.requests("POST", "/api/v1/projects")[0].Body
	if body["name"] != "web" || body["defaultRuntimeBroker"] != "vm" || body["sharingMode"] != "clone-per-agent" {
		t.Errorf("create body %v", body)
	}
	mustRun(t, "project", "create", "api")
	mustRun(t, "project", "create", "docs")

	r = mustRun(t, "project", "list")
	if n := len(strings.Split(strings.TrimSpace(r.out), "\n")); n != 4 {
		t.Errorf("want 3 projects over 2 pages:\n%s", r.out)
	}
	r = mustRun(t, "project", "list", "-o", "json")
	var ps []map[string]any
	if err := json.Unmarshal([]byte(r.out), &ps); err != nil || len(ps) != 3 {
		t.Errorf("json: %v %s", err, r.out)
	}

	// Only the flags given are sent; an empty value clears.
	mustRun(t, "project", "set", "web", "--active-profile", "k8s", "--default-broker", "")
	body = h.requests("PATCH", "/api/v1/projects/web")[0].Body
	if len(body) != 2 || body["activeProfile"] != "k8s" || body["defaultRuntimeBroker"] != "" {
		t.Errorf("patch body %v", body)
	}
	r = mustRun(t, "project", "show", "web", "-o", "json")
	var p map[string]any
	json.Unmarshal([]byte(r.out), &p)
	if p["activeProfile"] != "k8s" || p["gitRemote"] != "https://g/web.git" {
		t.Errorf("show %v", p)
	}
	r = runCLI(t, "", "project", "show", "nope")
	if r.code != 1 || r.err != "error: project_not_found: project \"nope\" not found\n" {
		t.Errorf("%+v", r)
	}
}

func TestAgentCreateStartAndActions(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	mustRun(t, "project", "create", "default")
	mustRun(t, "project", "create", "web")

	r := mustRun(t, "create", "fixer", "--project", "web", "--broker", "vm", "-p", "k8s", "--env", "A=1", "--env", "B=x=y",
		"--", "claude", "-p", "fix it")
	if !strings.Contains(r.out, "fixer") || !strings.Contains(r.out, "created") {
		t.Errorf("%s", r.out)
	}
	body := h.requests("POST", "/api/v1/agents")[0].Body
	want := `{"broker":"vm","command":["claude","-p","fix it"],"env":{"A":"1","B":"x=y"},"name":"fixer","profile":"k8s","project":"web","start":false}`
	if got, _ := json.Marshal(body); string(got) != want {
		t.Errorf("create body\n got %s\nwant %s", got, want)
	}

	// start on an existing agent starts it, warning about creation flags.
	r = mustRun(t, "start", "fixer", "--project", "web", "--image", "x")
	if len(h.requests("POST", "/api/v1/agents/fixer/start")) != 1 || !strings.Contains(r.err, "ignoring --image") {
		t.Errorf("start existing: %+v", r)
	}
	// start on a missing agent creates it with start=true, in the default project.
	r = mustRun(t, "start", "helper", "-o", "json")
	posts := h.requests("POST", "/api/v1/agents")
	if len(posts) != 2 || posts[1].Body["start"] != true || posts[1].Body["project"] != "default" {
		t.Errorf("start new: %+v", posts)
	}
	var ag map[string]any
	if err := json.Unmarshal([]byte(r.out), &ag); err != nil || ag["phase"] != "running" {
		t.Errorf("json %v %s", err, r.out)
	}
	// SCION_PROJECT is the default project.
	t.Setenv("SCION_PROJECT", "web")
	for _, act := range []string{"stop", "restart", "suspend", "resume"} {
		mustRun(t, act, "fixer")
		if got := h.requests("POST", "/api/v1/agents/fixer/"+act); len(got) != 1 || got[0].Query != "project=web" {
			t.Errorf("%s: %+v", act, got)
		}
	}
	mustRun(t, "delete", "fixer")
	if len(h.requests("DELETE", "/api/v1/agents/fixer")) != 1 {
		t.Error("delete not sent")
	}
	r = runCLI(t, "", "stop", "ghost")
	if r.code != 1 || r.err != "error: agent_not_found: agent \"ghost\" not found\n" {
		t.Errorf("%+v", r)
	}
}

func TestAgentListAndLogs(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	mustRun(t, "project", "create", "web")
	mustRun(t, "project", "create", "api")
	for _, a := range [][]string{{"a1", "web", "vm"}, {"a2", "web", "laptop"}, {"a3", "web", "vm"}, {"b1", "api", "vm"}} {
		mustRun(t, "start", a[0], "--project", a[1], "--broker", a[2])
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
	if r := mustRun(t, "list", "--project", "web", "--broker", "none", "-o", "json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("empty list json %q", r.out)
	}

	r = mustRun(t, "logs", "a1", "--project", "web", "-f", "--tail", "5")
	if r.out != "log of a1 (follow=true tail=5)\n" {
		t.Errorf("logs %q", r.out)
	}
}
