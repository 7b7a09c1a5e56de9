package system

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/wait"
)

const (
	killCreates     = 100 // agent creates per trial
	killConcurrency = 16  // creates in flight at once
	killAfterAcks   = 30  // SIGKILL the Hub once this many creates were acknowledged
	killTrials      = 3
)

// TestHubKill9DuringCreates: "an acknowledged write survives kill -9 of
// the Hub". A workstation Hub (SQLite, local broker, fake runtime) takes
// 100 concurrent agent creates and is killed with SIGKILL in the middle.
// After a restart on the same database and port, every create that got a
// 2xx exists exactly once, no agent name appears twice, and the capacity
// reservations match the running agents. Three trials shake out timing.
func TestHubKill9DuringCreates(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	for i := 1; i <= killTrials; i++ {
		t.Run(fmt.Sprintf("trial%d", i), hubKillTrial)
	}
}

// createOutcome is what the client saw for one create.
type createOutcome struct {
	acked  map[string]string // name -> agent ID of the 2xx response
	failed map[string]error  // name -> the error
}

func hubKillTrial(t *testing.T) {
	h := newHost(t, "workstation")
	hub := startWorkstationHub(t, h, hbFlags...)
	ws := readWorkstation(t, h)
	cl := client.New(hub.URL, ws.AdminToken)
	waitLocalBrokerOnline(t, cl)

	out := fireCreates(t, cl, hub.proc)
	if !hub.proc.Exited() {
		t.Fatalf("the Hub was never killed: only %d of %d creates were acknowledged (need %d)", len(out.acked), killCreates, killAfterAcks)
	}

	hub.restart(t)
	// The token from before the crash must still work: tokens live in the
	// database, they are not rotated by a restart.
	cl = client.New(hub.URL, ws.AdminToken)
	waitLocalBrokerOnline(t, cl)
	if ws2 := readWorkstation(t, h); ws2.BrokerID != ws.BrokerID {
		t.Errorf("the workstation broker changed identity across the restart: %s, then %s (its agents are orphaned)", ws.BrokerID, ws2.BrokerID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agents, err := cl.ListAllAgents(ctx, client.AgentFilter{})
	if err != nil {
		t.Fatalf("list agents after the restart: %v", err)
	}
	count := map[string]int{}
	ids := map[string]string{}
	phases := map[string]int{}
	for _, a := range agents {
		count[a.Slug]++
		ids[a.Slug] = a.ID
		phases[a.Phase]++
	}
	for name, n := range count {
		if n > 1 {
			t.Errorf("agent %q exists %d times", name, n)
		}
	}
	var lost []string
	for name, id := range out.acked {
		switch {
		case count[name] == 0:
			lost = append(lost, name)
		case ids[name] != id:
			t.Errorf("agent %q was acknowledged as %s but after the restart it is %s", name, id, ids[name])
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged creates are gone after the restart: %v", len(lost), lost)
	}
	unacked := 0
	for name := range count {
		if _, ok := out.acked[name]; !ok {
			unacked++
		}
	}
	t.Logf("MEASURED: %d creates: acked=%d failed=%d; present after restart=%d (of which not acked=%d); phases %v",
		killCreates, len(out.acked), len(out.failed), len(agents), unacked, phases)
	if n := len(out.acked) + len(out.failed); n != killCreates {
		t.Errorf("accounted for %d creates, want %d", n, killCreates)
	}

	checkReservations(t, cl)
}

// fireCreates sends killCreates creates, killConcurrency at a time, and
// SIGKILLs the Hub once killAfterAcks were acknowledged. The creates after
// the kill fail fast (connection refused), which is part of the trial.
func fireCreates(t *testing.T, cl *client.Client, hubProc *Proc) createOutcome {
	t.Helper()
	out := createOutcome{acked: map[string]string{}, failed: map[string]error{}}
	var mu sync.Mutex
	var acks atomic.Int32
	var killOnce sync.Once
	names := make(chan string)
	var wg sync.WaitGroup
	for range killConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				a, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Start: true,
					Command: []string{"sleep", "3600"}})
				cancel()
				mu.Lock()
				if err == nil {
					out.acked[name] = a.ID
				} else {
					out.failed[name] = err
				}
				mu.Unlock()
				if err == nil && acks.Add(1) >= killAfterAcks {
					// Signal only; reaping happens below, so creates in
					// flight meet the crash as they would in production.
					killOnce.Do(func() { hubProc.kill(syscall.SIGKILL) })
				}
			}
		}()
	}
	for i := range killCreates {
		names <- fmt.Sprintf("k9-%03d", i)
	}
	close(names)
	wg.Wait()
	if acks.Load() >= killAfterAcks {
		hubProc.WaitExit(t, 10*time.Second)
	}
	// The kinds of failure, for the log: refused, reset, EOF, 5xx...
	kinds := map[string]int{}
	for _, err := range out.failed {
		kinds[failureKind(err)]++
	}
	t.Logf("create failures by kind: %v", kinds)
	return out
}

func failureKind(err error) string {
	if e := (*api.Error)(nil); errors.As(err, &e) {
		return fmt.Sprintf("HTTP %d %s", e.Status, e.Code)
	}
	s := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "EOF", "broken pipe", "deadline exceeded"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	return s
}

// checkReservations: once the broker is back, the sum of reservations
// (runningAgents over all brokers) equals the number of running agents.
// The Hub reconciles the broker's inventory (empty: the fake runtime died
// with the workstation process) before the broker shows online, so this
// should hold at once; a short poll allows for late status reports.
func checkReservations(t *testing.T, cl *client.Client) {
	t.Helper()
	wait.Eventually(t, 5*time.Second, pollInterval, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		msg, err := reservationMismatch(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if msg != "" {
			return fmt.Errorf("capacity leak: after the broker came back online (having reported an empty inventory), "+
				"reservations still do not match running agents: %s", msg)
		}
		return nil
	})
}

func reservationMismatch(ctx context.Context, cl *client.Client) (string, error) {
	brokers, err := cl.ListAllBrokers(ctx)
	if err != nil {
		return "", err
	}
	agents, err := cl.ListAllAgents(ctx, client.AgentFilter{})
	if err != nil {
		return "", err
	}
	reserved := 0
	for _, b := range brokers {
		reserved += b.RunningAgents
	}
	running := 0
	byPhase := map[string][]string{}
	for _, a := range agents {
		if a.Phase == api.PhaseRunning {
			running++
		}
		byPhase[a.Phase] = append(byPhase[a.Phase], fmt.Sprintf("%s(%q)", a.Slug, a.StatusMessage))
	}
	if reserved == running {
		return "", nil
	}
	var detail []string
	for p, names := range byPhase {
		if p != api.PhaseStopped && p != api.PhaseRunning { // the bulk: not interesting by name
			sort.Strings(names)
			detail = append(detail, fmt.Sprintf("%s=%v", p, names))
		} else {
			detail = append(detail, fmt.Sprintf("%s=%d agents", p, len(names)))
		}
	}
	sort.Strings(detail)
	return fmt.Sprintf("brokers' runningAgents sum to %d, but %d agents are running; agents by phase: %s",
		reserved, running, strings.Join(detail, "; ")), nil
}

// readWorkstation reads workstation.json, where the workstation Hub puts
// its URL, bootstrap admin token and broker ID for the local CLI.
func readWorkstation(t *testing.T, h *host) config.Workstation {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.home, "workstation.json"))
	if err != nil {
		t.Fatalf("workstation.json: %v", err)
	}
	var ws config.Workstation
	if err := json.Unmarshal(b, &ws); err != nil || ws.AdminToken == "" || ws.BrokerID == "" {
		t.Fatalf("workstation.json %s: %v", b, err)
	}
	return ws
}

// waitLocalBrokerOnline waits for the workstation's own broker ("local").
func waitLocalBrokerOnline(t *testing.T, cl *client.Client) {
	t.Helper()
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		bs, err := cl.ListAllBrokers(ctx)
		if err != nil {
			return err
		}
		if len(bs) != 1 || bs[0].Status != api.BrokerOnline {
			return fmt.Errorf("want the one local broker online, have %+v", bs)
		}
		return nil
	})
}
