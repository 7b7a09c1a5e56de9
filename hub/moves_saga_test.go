package hub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/moves"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/store"
)

// bindExports makes one export directory (with its subpath_root "ws")
// and bind-mounts it at a mount point of each named broker, as two hosts
// mounting one NFS export: it returns each broker's subpath_root and the
// export's own.
func bindExports(t *testing.T, brokers ...string) (map[string]string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("bind mounts need root, and CI=true runs as root")
		}
		t.Skip("bind mounts need root")
	}
	export := t.TempDir()
	if err := os.Mkdir(filepath.Join(export, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	roots := map[string]string{}
	for _, b := range brokers {
		m := t.TempDir()
		if err := syscall.Mount(export, m, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(m, syscall.MNT_DETACH) })
		roots[b] = filepath.Join(m, "ws")
	}
	return roots, filepath.Join(export, "ws")
}

// moveFixture is a Hub with brokers b1 and b2 on one export, a
// shared-workspace project and a running agent on b1 whose checkout holds
// an uncommitted file.
type moveFixture struct {
	e         *testenv.Env
	agent     *api.Agent
	work      string // the uncommitted file, as the export holds it
	b1, b2    *testenv.Broker
	oldRun    string
	hookStep  atomic.Value // string: the step the hook acts on
	hookError atomic.Value // error
	halted    atomic.Bool  // the hook halted a saga
}

func newMoveFixture(t *testing.T, postgres bool) *moveFixture {
	t.Helper()
	roots, export := bindExports(t, "b1", "b2")
	repo := gitrepo.New(t)
	f := &moveFixture{}
	f.hookStep.Store("")
	// Liveness is not what these tests look at: heartbeats a loaded
	// machine keeps up with (the defaults' 600 ms grace flaps there and
	// fails the fixture's own create).
	f.e = testenv.New(t, testenv.Options{Brokers: 2, Exports: roots, Postgres: postgres,
		HeartbeatInterval: time.Second, Grace: 5 * time.Second, MoveHook: func(step string) error {
			if step == f.hookStep.Load().(string) {
				err, _ := f.hookError.Load().(error)
				if h, ok := err.(hookFunc); ok {
					return h()
				}
				if errors.Is(err, moves.ErrHalt) {
					f.halted.Store(true)
				}
				return err
			}
			return nil
		}})
	ctx := context.Background()
	if _, err := f.e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "shared", GitRemote: repo.URL,
		SharingMode: api.SharingSharedWorkspace, DefaultBroker: "b1"}); err != nil {
		t.Fatal(err)
	}
	a, err := f.e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "mover", Project: "shared", Broker: "b1", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	f.agent, f.oldRun = a, a.RunID
	f.b1, f.b2 = f.e.Brokers()[0], f.e.Brokers()[1]
	p, err := f.e.Store.GetProject(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	f.work = filepath.Join(export, "projects", p.ID, "shared", "uncommitted.txt")
	if err := os.WriteFile(f.work, []byte("work in progress\n"), 0o644); err != nil {
		t.Fatalf("the shared checkout is not on the export: %v", err)
	}
	return f
}

// moveEnded waits for the agent's move to end and returns its record.
func (f *moveFixture) moveEnded(t *testing.T) *store.Move {
	t.Helper()
	var m *store.Move
	wait.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		ms, err := f.e.Store.ListMoves(context.Background(), f.agent.ID)
		if err != nil {
			return err
		}
		if len(ms) == 0 || ms[0].Outcome == "" {
			return errors.New("the move is still running")
		}
		m = ms[0]
		return nil
	})
	return m
}

// invariants are what every move leaves, however it ends: the agent on
// exactly one broker, any slot it holds on that broker, the export's
// work untouched.
func (f *moveFixture) invariants(t *testing.T) *store.Agent {
	t.Helper()
	ctx := context.Background()
	a, err := f.e.Store.GetAgent(ctx, f.agent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.BrokerID != f.b1.ID && a.BrokerID != f.b2.ID {
		t.Fatalf("agent assigned to %q, neither broker", a.BrokerID)
	}
	slots := 0
	for _, b := range []*testenv.Broker{f.b1, f.b2} {
		ids, err := f.e.Store.ReservedAgents(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if id != a.ID {
				continue
			}
			slots++
			if b.ID != a.BrokerID {
				t.Errorf("the agent's slot is on %s, but it is assigned to %s", b.Name, a.BrokerID)
			}
		}
	}
	if slots > 1 {
		t.Errorf("the agent holds %d slots", slots)
	}
	if a.Phase == api.PhaseRunning && slots != 1 {
		t.Errorf("the agent runs and holds %d slots", slots)
	}
	if b, err := os.ReadFile(f.work); err != nil || string(b) != "work in progress\n" {
		t.Errorf("the uncommitted work on the export: %q, %v", b, err)
	}
	return a
}

func (f *moveFixture) move(t *testing.T) *api.MoveAccepted {
	t.Helper()
	acc, err := f.e.Admin.Move(context.Background(), f.agent.ID, "", api.ReincarnateRequest{Broker: "b2", Handoff: "finish the parser"})
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	if acc.Move.Step != api.MoveStepAccepted || !acc.Plan.Eligible || acc.Plan.TransferMode != api.TransferExport {
		t.Fatalf("202 answered %+v", acc)
	}
	return acc
}

// TestMoveOverTheExport: an agent with uncommitted work in a shared
// checkout on the export moves from b1 to b2: 202, then it runs on b2 as
// its next generation with the handoff in its home, its slot on b2, its
// work where it was, and b1 holds nothing of it any more.
func TestMoveOverTheExport(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			f := newMoveFixture(t, engine == "postgres")
			f.move(t)
			m := f.moveEnded(t)
			if m.Outcome != api.MoveCompleted || m.SourceCleanup != api.CleanupDone || m.Step != api.MoveStepCleaned {
				t.Fatalf("move ended %+v", m)
			}
			a := f.invariants(t)
			if a.BrokerID != f.b2.ID || a.Phase != api.PhaseRunning || a.Generation != 2 || a.RunID == f.oldRun {
				t.Fatalf("after the move: broker %s phase %s generation %d run %s", a.BrokerID, a.Phase, a.Generation, a.RunID)
			}
			if g := a.Generations[len(a.Generations)-1]; g.BrokerID != f.b2.ID || g.RunID != a.RunID || !strings.Contains(g.Reason, "b1") {
				t.Errorf("the new generation's link: %+v", g)
			}
			ctx := context.Background()
			if _, err := f.b1.Runtime.Inspect(ctx, a.ID); !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("b1 still has the agent's container: %v", err)
			}
			if st, err := f.b2.Runtime.Inspect(ctx, a.ID); err != nil || st.State != runtime.StateRunning {
				t.Errorf("b2's container: %+v, %v", st, err)
			}
			dirs, _ := filepath.Glob(filepath.Join(f.b1.DataDir, "projects", "*", "agents", a.ID))
			if len(dirs) != 0 {
				t.Errorf("b1 keeps the agent's directory: %v", dirs)
			}
			handoff, err := filepath.Glob(filepath.Join(f.b2.DataDir, "projects", "*", "agents", a.ID, "home", ".scion", "handoff.md"))
			if err != nil || len(handoff) != 1 {
				t.Fatalf("the handoff in b2's home: %v, %v", handoff, err)
			}
			if b, _ := os.ReadFile(handoff[0]); !strings.Contains(string(b), "finish the parser") || !strings.Contains(string(b), "generation 2") {
				t.Errorf("the handoff file says %q", b)
			}
			if _, serves, err := f.e.Store.GetBrokerForProject(ctx, f.b2.ID, a.ProjectID); err != nil || !serves {
				t.Errorf("b2 does not serve the project after the move: %v %v", serves, err)
			}
			listed, err := f.e.Admin.AgentMoves(ctx, a.ID, "")
			if err != nil || len(listed) != 1 || listed[0].SourceCleanup != api.CleanupDone {
				t.Errorf("GET moves: %+v, %v", listed, err)
			}
			// A second move back while nothing runs is a new record.
			if _, err := f.e.Admin.Move(ctx, a.ID, "", api.ReincarnateRequest{Broker: "b2"}); !api.IsCode(err, api.CodeMoveRefused) {
				t.Errorf("a move to the broker it is on: %v, want agent_move_refused", err)
			}
		})
	}
}

// TestMoveFailureAtEachStep injects a failure before each step of the
// saga, and a Hub killed there (the saga halted, the Hub restarted over
// the same database), on both engines. Every outcome is the spec's case,
// and the invariants hold.
func TestMoveFailureAtEachStep(t *testing.T) {
	injected := api.Errorf(api.CodeRuntimeError, "injected failure")
	unanswered := api.Errorf(api.CodeBrokerTimeout, "injected: no answer")
	type want struct {
		onTarget bool
		outcome  string
		cleanup  string
		step     string // the last step done
	}
	onSource := func(step string) want {
		return want{outcome: api.MoveFailed, cleanup: api.CleanupInterrupted, step: step}
	}
	cases := []struct {
		step string
		err  error
		want want
	}{
		{moves.HookChecks, injected, onSource(api.MoveStepAccepted)},
		{moves.HookStop, injected, onSource(api.MoveStepAccepted)},
		{moves.HookAssign, injected, onSource(api.MoveStepStopped)},
		{moves.HookProvision, injected, onSource(api.MoveStepAssigned)}, // rolled back
		{moves.HookStart, injected, onSource(api.MoveStepProvisioned)},  // rolled back
		{moves.HookStart, unanswered, want{onTarget: true, outcome: api.MoveFailed, cleanup: api.CleanupAmbiguousStart, step: api.MoveStepProvisioned}},
		{moves.HookCleanup, injected, want{onTarget: true, outcome: api.MoveCompleted, cleanup: "failed:injected failure", step: api.MoveStepCleaned}},
		{moves.HookChecks, moves.ErrHalt, onSource(api.MoveStepAccepted)},
		{moves.HookStop, moves.ErrHalt, onSource(api.MoveStepAccepted)},
		{moves.HookAssign, moves.ErrHalt, onSource(api.MoveStepStopped)},
		{moves.HookProvision, moves.ErrHalt, want{onTarget: true, outcome: api.MoveFailed, cleanup: api.CleanupInterrupted, step: api.MoveStepAssigned}},
		{moves.HookStart, moves.ErrHalt, want{onTarget: true, outcome: api.MoveFailed, cleanup: api.CleanupInterrupted, step: api.MoveStepProvisioned}},
		{moves.HookCleanup, moves.ErrHalt, want{onTarget: true, outcome: api.MoveCompleted, cleanup: api.CleanupDone, step: api.MoveStepCleaned}},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, c := range cases {
			kind := "fails"
			if errors.Is(c.err, moves.ErrHalt) {
				kind = "kills the Hub"
			} else if c.err == unanswered {
				kind = "goes unanswered"
			}
			t.Run(fmt.Sprintf("%s/%s %s", engine, c.step, kind), func(t *testing.T) {
				f := newMoveFixture(t, engine == "postgres")
				f.hookStep.Store(c.step)
				f.hookError.Store(c.err)
				f.move(t)
				if errors.Is(c.err, moves.ErrHalt) {
					// The saga stops where a killed Hub would; the next
					// Hub's start ends or resumes it.
					wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
						if !f.halted.Load() {
							return errors.New("the saga has not reached the step yet")
						}
						return nil
					})
					f.hookStep.Store("")
					f.e.RestartHub()
				}
				m := f.moveEnded(t)
				if m.Outcome != c.want.outcome || m.SourceCleanup != c.want.cleanup || m.Step != c.want.step {
					t.Fatalf("move ended outcome %q cleanup %q step %q (%s); want %q %q %q",
						m.Outcome, m.SourceCleanup, m.Step, m.Message, c.want.outcome, c.want.cleanup, c.want.step)
				}
				a := f.invariants(t)
				wantBroker := f.b1
				if c.want.onTarget {
					wantBroker = f.b2
				}
				if a.BrokerID != wantBroker.ID {
					t.Fatalf("the agent is on %s, want %s", a.BrokerID, wantBroker.Name)
				}
				if m.Outcome == api.MoveFailed && !strings.HasPrefix(m.Message, api.MoveFailedMessagePrefix) {
					t.Errorf("a failed move's message %q", m.Message)
				}
				if m.Outcome == api.MoveFailed && !errors.Is(c.err, moves.ErrHalt) && a.StatusMessage != m.Message {
					t.Errorf("the agent's status message %q, the move's %q", a.StatusMessage, m.Message)
				}
				if !c.want.onTarget {
					// Back on the source: its run and generation as they
					// were, and the target holds nothing of it.
					if a.RunID != f.oldRun || a.Generation != 1 {
						t.Errorf("restored with run %s generation %d; want %s, 1", a.RunID, a.Generation, f.oldRun)
					}
					if _, err := f.b2.Runtime.Inspect(context.Background(), a.ID); !errors.Is(err, runtime.ErrNotFound) {
						t.Errorf("the target keeps a container of the agent: %v", err)
					}
				}
				// The agent can be started (or moved again) afterwards.
				if m.Outcome == api.MoveFailed && c.err != unanswered {
					f.e.WaitBrokerStatus(a.BrokerID, api.BrokerOnline)
					got, err := f.e.Admin.AgentAction(context.Background(), a.ID, "", "start")
					if err != nil || got.Phase != api.PhaseRunning {
						t.Errorf("starting the agent after the failed move: %+v, %v", got, err)
					}
				}
			})
		}
	}
}

// TestMoveGivesWayToAChangeDuringIt: between the stop and the
// assignment a start through the API is refused (409, the move runs);
// a change the API could not stop (the agent's record written by another
// Hub, say: started again on the source with a new run) makes the move
// give way rather than assign it: the move fails, the target holds
// nothing, and the agent stays on the source as the change left it.
func TestMoveGivesWayToAChangeDuringIt(t *testing.T) {
	f := newMoveFixture(t, false)
	f.beforeOnce(moves.HookAssign, func() error {
		ctx := context.Background()
		if _, err := f.e.Admin.AgentAction(ctx, f.agent.ID, "", "start"); !api.IsCode(err, api.CodeConflict) {
			t.Errorf("a start during the move: %v, want conflict", err)
		}
		if err := f.e.Admin.DeleteAgent(ctx, f.agent.ID, ""); !api.IsCode(err, api.CodeConflict) {
			t.Errorf("a delete during the move: %v, want conflict", err)
		}
		a, err := f.e.Store.GetAgent(ctx, f.agent.ID)
		if err != nil {
			return err
		}
		a.Phase, a.RunID = api.PhaseRunning, "another-run"
		limit := 0
		return f.e.Store.UpdateAgentWith(ctx, a, store.UpdateAgentOptions{ReserveLimit: &limit})
	})
	f.move(t)
	m := f.moveEnded(t)
	if m.Outcome != api.MoveFailed || m.Step != api.MoveStepStopped || !strings.Contains(m.Message, "changed during the move") {
		t.Fatalf("move ended %+v", m)
	}
	a := f.invariants(t)
	if a.BrokerID != f.b1.ID || a.RunID != "another-run" {
		t.Fatalf("the agent is on %s with run %s, want b1 as the change left it", a.BrokerID, a.RunID)
	}
	if _, err := f.b2.Runtime.Inspect(context.Background(), a.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("b2 has a container of the agent: %v", err)
	}
}

// hookFunc is a hook error that runs a function instead (see
// moveFixture's hook): the function's error is the hook's.
type hookFunc func() error

func (h hookFunc) Error() string { return "hook function" }

// beforeOnce runs do from the hook before the saga's step, the first
// time only; its error fails the step.
func (f *moveFixture) beforeOnce(step string, do func() error) {
	var once atomic.Bool
	f.hookStep.Store(step)
	f.hookError.Store(hookFunc(func() error {
		if once.Swap(true) {
			return nil
		}
		return do()
	}))
}

// TestMoveRefusedByTheTargetsQuota: the target fills up between the dry
// run and the quota's move: the agent is left stopped on the source,
// "reincarnation failed: target broker quota: ...".
func TestMoveRefusedByTheTargetsQuota(t *testing.T) {
	f := newMoveFixture(t, false)
	f.beforeOnce(moves.HookAssign, func() error {
		ctx := context.Background()
		one := 1
		if _, err := f.e.Admin.UpdateBroker(ctx, "b2", api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &one}}); err != nil {
			return err
		}
		_, err := f.e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "filler", Project: "shared", Broker: "b2", Start: true, Command: []string{"x"}})
		return err
	})
	f.move(t)
	m := f.moveEnded(t)
	if m.Outcome != api.MoveFailed || m.Step != api.MoveStepStopped || !strings.HasPrefix(m.Message, api.MoveFailedMessagePrefix+"target broker quota: ") {
		t.Fatalf("move ended %+v", m)
	}
	a := f.invariants(t)
	if a.BrokerID != f.b1.ID || a.Phase != api.PhaseError || a.StatusMessage != m.Message {
		t.Fatalf("the agent: broker %s phase %s message %q", a.BrokerID, a.Phase, a.StatusMessage)
	}
}
