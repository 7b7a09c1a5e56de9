package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// TestProjectDeletePrintsWhatWasLeft: `project delete` prints what the
// brokers removed for the project, what is queued and what was left and why, and -o json
// is the Hub's answer.
func TestProjectDeletePrintsWhatWasLeft(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	r := mustRun(t, "project", "delete", "web")
	for _, want := range []string{
		"Deleted project web.",
		"Removed on runtime broker k8s: agents/scion-project-abc-workspace",
		`Queued on runtime broker k8s-2: runtime broker "k8s-2" is offline; the cleanup is queued`,
		"Left on runtime broker k8s-3: project resources: project cleanup failed: forbidden",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("project delete output lacks %q:\n%s", want, r.out)
		}
	}
	r = mustRun(t, "project", "delete", "web", "-o", "json")
	var res api.ProjectDeleted
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	if len(res.Removed) != 1 || len(res.Queued) != 1 || len(res.Left) != 1 || res.Left[0].BrokerID != "b-3" {
		t.Errorf("project delete -o json = %+v", res)
	}
}
