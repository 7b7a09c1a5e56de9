package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestStartWaitsForASlowCreate: a broker whose runtime takes longer than
// the Hub's dispatch timeout to create an agent. The Hub answers
// runtime_broker_timeout ("retry with the same Idempotency-Key"); the CLI
// does that for the user and ends with the agent created, once, instead
// of failing while the broker goes on to make it.
func TestStartWaitsForASlowCreate(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1, DispatchTimeout: 300 * time.Millisecond})
	useHub(t, "team", e.URL, e.AdminToken)
	rt := e.Brokers()[0].Runtime
	rt.SetLatency("Create", 2*time.Second)

	for _, args := range [][]string{
		{"start", "slow1", "-o", "json", "--", "sleep", "1000"},
		{"create", "slow2", "-o", "json", "--", "sleep", "1000"},
	} {
		r := mustRun(t, args...)
		if !strings.Contains(r.err, "has not finished creating agent") {
			t.Errorf("scion %s: stderr does not say it waits: %q", strings.Join(args, " "), r.err)
		}
		a, err := e.Admin.GetAgent(context.Background(), args[1], "default")
		if err != nil {
			t.Fatalf("scion %s: %v", args[1], err)
		}
		if !strings.Contains(r.out, a.ID) {
			t.Errorf("scion %s printed %q, not agent %s", strings.Join(args, " "), r.out, a.ID)
		}
		if args[0] == "start" && a.Phase != api.PhaseRunning {
			t.Errorf("%s: phase %s (%s)", args[1], a.Phase, a.StatusMessage)
		}
	}
	if n := rt.Calls("Create"); n != 2 {
		t.Errorf("the runtime was asked to create %d times for 2 agents", n)
	}

	// An action waits the same way, and runs once.
	rt.SetLatency("Start", 2*time.Second) // a restart is a stop, then a start
	starts := rt.Calls("Start")
	r := mustRun(t, "restart", "slow1", "-o", "json")
	if !strings.Contains(r.err, "has not finished restart of agent slow1") {
		t.Errorf("scion restart: stderr does not say it waits: %q", r.err)
	}
	if a, err := e.Admin.GetAgent(context.Background(), "slow1", "default"); err != nil || a.Phase != api.PhaseRunning || !strings.Contains(r.out, a.ID) {
		t.Errorf("after the restart: %+v %v; printed %q", a, err, r.out)
	}
	if n := rt.Calls("Start") - starts; n != 1 {
		t.Errorf("the runtime was asked to start %d times for one restart", n)
	}
}
