package hub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// TestProjectDeleteQueuesCleanupForOfflineBrokers: a project delete asks
// the brokers that provided for the project and keep project resources
// (project-cleanup) to remove them; its answer names, per broker, what was
// removed, queued and left. An offline broker's cleanup is queued, and
// delivered when it reconnects. A broker whose runtime keeps nothing of
// the kind is in no list.
func TestProjectDeleteQueuesCleanupForOfflineBrokers(t *testing.T) {
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
	if len(res.Removed) != 0 || len(res.Left) != 0 {
		t.Errorf("removed = %+v, left = %+v; the fake runtime keeps nothing and b2's cleanup is queued", res.Removed, res.Left)
	}
	if len(res.Queued) != 1 || res.Queued[0].Broker != "b2" || res.Queued[0].BrokerID != b2.ID ||
		!strings.Contains(res.Queued[0].Reason, "offline") || res.Queued[0].Dispatch == "" {
		t.Fatalf("queued = %+v, want b2's cleanup, offline, with its dispatch", res.Queued)
	}
	if _, err := e.Admin.GetProject(ctx, "default"); err == nil {
		t.Error("the project is still there")
	}
	d, err := e.Store.GetDispatch(ctx, res.Queued[0].Dispatch)
	if err != nil || d.Status != store.DispatchPending || d.Method != wire.MethodProjectCleanup || d.AgentID != e.ProjectID {
		t.Fatalf("queued dispatch = %+v, %v", d, err)
	}

	// b2 reconnects: the cleanup is delivered.
	e.StartBroker(b2, b2.Runtime)
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		d, err := e.Store.GetDispatch(ctx, res.Queued[0].Dispatch)
		if err != nil {
			return err
		}
		if d.Status != store.DispatchDelivered {
			return fmt.Errorf("dispatch %s (%s)", d.Status, d.Result)
		}
		return nil
	})
}
