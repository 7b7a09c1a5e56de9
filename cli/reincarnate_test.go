package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/wire"
)

// TestReincarnateMoveChecks: `scion reincarnate --broker` against a real
// Hub and brokers b1, b2 that mount one workspace export (both at the same
// place here) and can take part in moves. A shared-workspace agent's move
// is eligible over the export; an empty-per-agent one's workspace is on
// b1's own disk, so its move is refused with every check printed and the
// --force hint, and previewed with --dry-run --force as a recreate; a
// real request goes out only after an eligible dry run, and the CLI
// follows the move to its end; an unknown broker is 404.
func TestReincarnateMoveChecks(t *testing.T) {
	setHome(t)
	export := t.TempDir()
	repo := gitrepo.New(t)
	moves := []string{wire.CapAgentMove, wire.CapAgentMoveRecreate}
	e := newHub(t, testenv.Options{Brokers: 2, Exports: map[string]string{"b1": export, "b2": export},
		Capabilities: map[string][]string{"b1": moves, "b2": moves}})
	useHub(t, "team", e.URL, e.AdminToken)
	ctx := context.Background()
	if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "shared", GitRemote: repo.URL,
		SharingMode: api.SharingSharedWorkspace, DefaultBroker: "b1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.ProvideProject(ctx, "b2", "shared"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, project string }{{"w", "shared"}, {"e", "default"}} {
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: c.name, Project: c.project, Broker: "b1", Start: true, Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}

	r := mustRun(t, "reincarnate", "w", "--project", "shared", "--broker", "b2", "--dry-run")
	st := printedChecks(r.out)
	if !strings.Contains(r.out, "eligible, transfer mode export") || len(st) != 11 || st["same_export"] != "passed" ||
		st["workspace_recreatable"] != "not_evaluated" || !strings.Contains(r.out, "uncommitted and unpushed changes included") {
		t.Errorf("dry run of an export move (%v):\n%s", st, r.out)
	}
	r = mustRun(t, "reincarnate", "w", "--project", "shared", "--broker", "b2", "--dry-run", "-o", "json")
	var plan api.MovePlan
	if err := json.Unmarshal([]byte(r.out), &plan); err != nil || !plan.Eligible || plan.TransferMode != api.TransferExport || len(plan.Checks) != 11 {
		t.Errorf("-o json: %v %+v", err, plan)
	}
	handoff := filepath.Join(t.TempDir(), "handoff.md")
	if err := os.WriteFile(handoff, []byte("finish the parser"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "reincarnate", "w", "--project", "shared", "--broker", "b2", "--handoff-file", handoff)
	for _, want := range []string{"accepted", "Move completed"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("a move's progress lacks %q:\n%s", want, r.out)
		}
	}
	if a, err := e.Admin.GetAgent(ctx, "w", "shared"); err != nil || a.Phase != api.PhaseRunning || a.BrokerName != "b2" || a.Generation != 2 {
		t.Errorf("after the move the agent is %+v (%v), want generation 2 running on b2", a, err)
	}
	r = runCLI(t, "", "reincarnate", "w", "--project", "shared", "--broker", "b2")
	if r.code == 0 || !strings.Contains(r.err, api.CodeMoveRefused) {
		t.Errorf("a move to the broker the agent is on: %+v", r)
	}

	r = runCLI(t, "", "reincarnate", "e", "--broker", "b2")
	st = printedChecks(r.out)
	if r.code == 0 || !strings.Contains(r.err, api.CodeMoveRefused) || !strings.Contains(r.err, "--dry-run --force") ||
		st["workspace_on_export"] != "failed" || st["capacity"] != "not_evaluated" || st["same_export"] != "passed" {
		t.Errorf("a move of a local workspace (%v): %+v", st, r)
	}
	// The hint is a command to run as it is: with the project it was given.
	mustRun(t, "project", "create", "side")
	if _, err := e.Admin.ProvideProject(ctx, "b1", "side"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.ProvideProject(ctx, "b2", "side"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "s", Project: "side", Broker: "b1", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "reincarnate", "s", "--project", "side", "--broker", "b2"); !strings.Contains(r.err, "scion reincarnate s --project side --broker b2 --dry-run --force") {
		t.Errorf("hint of a move in another project: %+v", r)
	}
	r = mustRun(t, "reincarnate", "e", "--broker", "b2", "--dry-run", "--force")
	st = printedChecks(r.out)
	if !strings.Contains(r.out, "eligible, transfer mode recreate") || st["same_export"] != "waived" || st["workspace_on_export"] != "waived" ||
		st["workspace_recreatable"] != "passed" || !strings.Contains(r.out, "Lost:") || !strings.Contains(r.out, "uncommitted and unpushed") {
		t.Errorf("forced dry run (%v):\n%s", st, r.out)
	}
	r = runCLI(t, "", "reincarnate", "e", "--broker", "b2", "--force")
	if r.code == 0 || !strings.Contains(r.err, api.CodeMoveRecreateNotEnabled) {
		t.Errorf("executing a recreate move: %+v", r)
	}
	r = runCLI(t, "", "reincarnate", "e", "--broker", "nope", "--dry-run")
	if r.code == 0 || !strings.Contains(r.err, api.CodeBrokerNotFound) {
		t.Errorf("unknown broker: %+v", r)
	}
	r = runCLI(t, "", "reincarnate", "e", "--dry-run")
	if r.code == 0 || !strings.Contains(r.err, "--broker") {
		t.Errorf("without --broker: %+v", r)
	}
	if a, err := e.Admin.GetAgent(ctx, "e", "default"); err != nil || a.Phase != api.PhaseRunning || a.BrokerName != "b1" {
		t.Errorf("after refused and dry-run moves the agent is %+v (%v), want running on b1 as before", a, err)
	}
}

// printedChecks are the check table's rows: check name to status.
func printedChecks(out string) map[string]string {
	st := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && slices.Contains(api.MoveCheckOrder, f[0]) {
			st[f[0]] = f[1]
		}
	}
	return st
}
