package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestProjectDeletePrintsWhatWasLeft: `project delete` prints what the
// brokers removed for the project, what is queued and what was left and
// why, and -o json is the Hub's answer. On a real Hub: broker k8s removes
// the project's workspace claim, k8s-2 is offline (its cleanup queued)
// and k8s-3's cleanup fails.
func TestProjectDeletePrintsWhatWasLeft(t *testing.T) {
	setHome(t)
	claim := []string{"agents/scion-project-abc-workspace"}
	e := newHub(t, testenv.Options{
		ProjectResources:  map[string][]string{"k8s": claim, "k8s-2": claim},
		ProjectCleanupErr: map[string]error{"k8s-3": errors.New("forbidden")},
	})
	ctx := context.Background()
	for _, p := range []string{"web", "web2"} {
		if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: p}); err != nil {
			t.Fatal(err)
		}
	}
	var k8s3 string
	for _, name := range []string{"k8s", "k8s-2", "k8s-3"} {
		b := e.AddBroker(name)
		for _, p := range []string{"web", "web2"} {
			if _, err := e.Admin.ProvideProject(ctx, b.ID, p); err != nil {
				t.Fatal(err)
			}
		}
		if name == "k8s-2" {
			e.StopBroker(b)
			e.WaitBrokerStatus(b.ID, api.BrokerOffline)
		}
		if name == "k8s-3" {
			k8s3 = b.ID
		}
	}
	useHub(t, "team", e.URL, e.AdminToken)

	web, err := e.Admin.GetProject(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "project", "delete", "web")
	for _, want := range []string{
		"Deleted project web.\n",
		"\nRemoved on runtime broker k8s: agents/scion-project-abc-workspace\n",
		"\nQueued on runtime broker k8s-2: runtime broker \"k8s-2\" is offline; the cleanup is queued and runs when it reconnects\n",
		"\nLeft on runtime broker k8s-3: project resources: project cleanup failed: fake runtime: project cleanup: forbidden; " +
			"remove the project's claims with: kubectl delete pvc -l scion.claim_scope=project,scion.project_id=" + web.ID + "\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("project delete output lacks %q:\n%s", want, r.out)
		}
	}
	r = mustRun(t, "project", "delete", "web2", "-o", "json")
	var res api.ProjectDeleted
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	if res.Name != "web2" || len(res.Removed) != 1 || len(res.Queued) != 1 || len(res.Left) != 1 || res.Left[0].BrokerID != k8s3 ||
		res.Removed[0].Broker != "k8s" || res.Removed[0].Resource != claim[0] || res.Queued[0].Broker != "k8s-2" {
		t.Errorf("project delete -o json = %+v", res)
	}
}

// TestProjectDeleteForce: a project with an agent is not deleted without
// --force, and the refusal names it; with --force the agent's workload is
// deleted on its broker and its record goes with the project.
func TestProjectDeleteForce(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	b := e.Brokers()[0]
	if _, err := e.Admin.ProvideProject(ctx, b.ID, "web"); err != nil {
		t.Fatal(err)
	}
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "web", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	useHub(t, "team", e.URL, e.AdminToken)
	r := runCLI(t, "", "project", "delete", "web")
	if r.code == 0 || !strings.Contains(r.err, "--force") {
		t.Fatalf("delete without --force: exit %d, stderr %q: want a refusal naming --force", r.code, r.err)
	}
	if _, err := e.Admin.GetAgent(ctx, a.ID, ""); err != nil {
		t.Fatalf("the refused delete removed the agent: %v", err)
	}
	r = mustRun(t, "project", "delete", "web", "--force")
	if !strings.Contains(r.out, "Deleted project web.\n") {
		t.Errorf("output %q", r.out)
	}
	if n := b.Runtime.Calls("Delete"); n != 1 {
		t.Errorf("runtime deletes %d, want 1", n)
	}
	if _, err := e.Admin.GetAgent(ctx, a.ID, ""); err == nil {
		t.Error("the agent's record is still there")
	}
}
