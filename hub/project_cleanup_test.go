package hub_test

import (
	"context"
	"strings"
	"testing"

	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

// TestProjectDeleteSaysWhatWasLeft: a project delete asks the brokers
// that provided for the project and keep project resources
// (project-cleanup) to remove them; its answer names, per broker, what
// was removed and what was left and why: an offline broker's resources
// are left with the way to remove them by hand. A broker whose runtime
// keeps nothing of the kind is in neither list.
func TestProjectDeleteSaysWhatWasLeft(t *testing.T) {
	caps := []string{wire.CapProjectCleanup}
	e := testenv.New(t, testenv.Options{Brokers: 3, Capabilities: map[string][]string{"b1": caps, "b2": caps}})
	ctx := context.Background()
	var b2 *testenv.Broker
	for _, b := range e.Brokers() {
		if b.Name == "b2" {
			b2 = b
		}
	}
	e.StopBroker(b2)
	e.WaitBrokerStatus(b2.ID, "offline")

	res, err := e.Admin.DeleteProject(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != e.ProjectID || res.Name != "default" {
		t.Errorf("delete answer names %s %s, want the project", res.ID, res.Name)
	}
	if len(res.Removed) != 0 {
		t.Errorf("removed = %+v; the fake runtime keeps nothing", res.Removed)
	}
	if len(res.Left) != 1 || res.Left[0].Broker != "b2" || res.Left[0].BrokerID != b2.ID ||
		!strings.Contains(res.Left[0].Reason, "offline") || !strings.Contains(res.Left[0].Reason, "kubectl delete pvc -l scion.claim_scope=project,scion.project_id="+e.ProjectID) {
		t.Errorf("left = %+v, want b2's resources, offline, with the way to remove them", res.Left)
	}
	if _, err := e.Admin.GetProject(ctx, "default"); err == nil {
		t.Error("the project is still there")
	}
}
