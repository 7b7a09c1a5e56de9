package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// TestReincarnateInPlace: `reincarnate` without a broker starts the
// agent's next generation where it is: a new run and generation, the
// image patched, the home rebuilt with the handoff in it, the workspace as
// it was, and its placement recorded (which a move needs). An agent whose
// container was removed by hand, started again, keeps its workspace too.
func TestReincarnateInPlace(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	b := e.Brokers()[0]
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(b.DataDir, "projects", a.ProjectID, "agents", a.ID)
	work := filepath.Join(dir, "workspace", "notes.txt")
	stale := filepath.Join(dir, "home", "session-history")
	for _, f := range []string{work, stale} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("kept?"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// An agent its broker has not recorded the placement of.
	rec, err := e.Store.GetAgent(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	rec.WorkspacePlacement = ""
	if err := e.Store.UpdateAgent(ctx, rec); err != nil {
		t.Fatal(err)
	}

	if _, err := e.Admin.Reincarnate(ctx, a.ID, "", api.ReincarnateRequest{DryRun: true}); !api.IsCode(err, api.CodeInvalidRequest) {
		t.Errorf("a dry run without a broker: %v, want bad_request", err)
	}
	got, err := e.Admin.Reincarnate(ctx, a.ID, "", api.ReincarnateRequest{Handoff: "pick up the notes", Image: "img:2"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != api.PhaseRunning || got.Generation != 2 || got.RunID == a.RunID || got.Image != "img:2" || got.BrokerID != b.ID {
		t.Fatalf("after the reincarnation: %+v", got)
	}
	if g := got.Generations[len(got.Generations)-1]; g.Reason != "reincarnated" || g.RunID != got.RunID {
		t.Errorf("its generation link %+v", g)
	}
	st, err := b.Runtime.Inspect(ctx, a.ID)
	if err != nil || st.RunID != got.RunID || st.State != runtime.StateRunning {
		t.Errorf("the runtime holds %+v, %v; want the new run running", st, err)
	}
	if body, err := os.ReadFile(work); err != nil || string(body) != "kept?" {
		t.Errorf("the workspace's file after the reincarnation: %q, %v", body, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old home's file survived the rebuild: %v", err)
	}
	if h, err := os.ReadFile(filepath.Join(dir, "home", api.HandoffFile)); err != nil || !strings.Contains(string(h), "pick up the notes") ||
		!strings.Contains(string(h), "generation 2") {
		t.Errorf("the handoff in the new home: %q, %v", h, err)
	}
	if rec, _ := e.Store.GetAgent(ctx, a.ID); rec.WorkspacePlacement != api.PlacementLocal {
		t.Errorf("placement after the reincarnation %q, want local", rec.WorkspacePlacement)
	}

	// The container removed by hand: the next start makes it again, over
	// the same workspace.
	if err := b.Runtime.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	e.StopBroker(b) // its reconnect's inventory tells the Hub
	e.StartBroker(b, b.Runtime.Restart())
	wait.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		x, err := e.Admin.GetAgent(ctx, a.ID, "")
		if err != nil || x.ContainerStatus != api.ContainerMissing {
			return errors.New("the Hub has not seen the container go")
		}
		return nil
	})
	// (A stopped agent's start first finds the container gone, which
	// leaves it with none: the next start makes it again.)
	x, err := e.Admin.AgentAction(ctx, a.ID, "", "start")
	if api.IsCode(err, api.CodeAgentNotFound) {
		x, err = e.Admin.AgentAction(ctx, a.ID, "", "start")
	}
	if err != nil || x.Phase != api.PhaseRunning {
		t.Fatalf("start after the container went: %+v, %v", x, err)
	}
	if body, err := os.ReadFile(work); err != nil || string(body) != "kept?" {
		t.Errorf("the workspace's file after the container was made again: %q, %v", body, err)
	}
}
