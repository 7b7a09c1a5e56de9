package system

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/wait"
)

// TestCallsToFrozenBrokerEndOffline: issue 12 item 19. A broker process
// frozen with SIGSTOP keeps its socket open; a create and a logs call sent
// to it right after the freeze are in flight when the Hub marks the
// broker offline (interval+grace), and both must answer 503
// runtime_broker_offline then, not at the 30 s dispatch deadline. The
// create's outcome is unknown at that moment; once the broker thaws and
// reconnects, its inventory settles the agent: running (with its slot) if
// the broker made the container, error with no slot if not. Never stuck
// provisioning.
func TestCallsToFrozenBrokerEndOffline(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	b := setupBroker(t, hub, token, "icy")
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{"icy": api.BrokerOnline}) })
	cl := client.New(hub.URL, token)
	ctx := context.Background()
	// An agent to ask for logs: running before the freeze.
	if _, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: "before", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}

	b.proc.Signal(t, syscall.SIGSTOP)
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			_ = syscall.Kill(b.proc.PID, syscall.SIGCONT)
		}
	})
	// kill(2) returns before every thread has stopped: wait until they
	// have, so the calls below really meet a frozen broker.
	wait.Eventually(t, 5*time.Second, pollInterval, func() error { return allThreadsStopped(b.proc.PID) })
	frozenAt := time.Now()
	type answer struct {
		what string
		err  error
		took time.Duration
	}
	answers := make(chan answer, 2)
	go func() {
		_, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: "during", Project: "default", Start: true, Command: []string{"x"}})
		answers <- answer{"create", err, time.Since(frozenAt)}
	}()
	go func() {
		rc, err := cl.Logs(ctx, "before", "default", false, 0)
		if err == nil {
			_, _ = io.Copy(io.Discard, rc)
			rc.Close()
		}
		answers <- answer{"logs", err, time.Since(frozenAt)}
	}()
	// interval+grace from the last frame before the freeze, plus slack for
	// a loaded machine; the dispatch deadline (30 s) is far beyond.
	budget := hbInterval + hbGrace + 5*time.Second
	for range 2 {
		select {
		case a := <-answers:
			t.Logf("MEASURED: %s to a frozen broker answered after %v (interval+grace = %v): %v", a.what, a.took.Round(time.Millisecond), hbInterval+hbGrace, a.err)
			var ae *api.Error
			if !errors.As(a.err, &ae) || ae.Status != 503 || ae.Code != api.CodeBrokerOffline {
				t.Errorf("%s: %v, want 503 %s", a.what, a.err, api.CodeBrokerOffline)
			} else if strings.Contains(ae.Message, "127.0.0.1") {
				t.Errorf("%s: the message names an internal address: %s", a.what, ae.Message)
			}
			if a.took > budget {
				t.Errorf("%s answered %v after the freeze, want within %v", a.what, a.took.Round(time.Millisecond), budget)
			}
		case <-time.After(45 * time.Second):
			t.Fatalf("a call to the frozen broker still pending %v after the freeze", time.Since(frozenAt).Round(time.Second))
		}
	}
	if t.Failed() {
		return
	}
	a, err := cl.GetAgent(ctx, "during", "default")
	if err != nil || a.Phase != api.PhaseProvisioning {
		t.Fatalf("the cut-off create's agent: %+v (%v), want provisioning until the broker is back", a, err)
	}

	b.proc.Signal(t, syscall.SIGCONT)
	thawed = true
	wait.Eventually(t, hubRestartBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{"icy": api.BrokerOnline}) })
	var settled *api.Agent
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		a, err := cl.GetAgent(ctx, "during", "default")
		if err != nil {
			return err
		}
		if a.Phase != api.PhaseRunning && a.Phase != api.PhaseError {
			return fmt.Errorf("agent phase %s (%s), want running or error", a.Phase, a.StatusMessage)
		}
		settled = a
		return nil
	})
	wantSlots := 1 // "before"
	if settled.Phase == api.PhaseRunning {
		wantSlots++
	}
	wait.Eventually(t, 10*time.Second, pollInterval, func() error { return wantReserved(cl, wantSlots) })
	t.Logf("MEASURED: after the thaw the cut-off create settled as %s (%s), %d slots held", settled.Phase, settled.StatusMessage, wantSlots)
}

// allThreadsStopped reports whether every thread of pid is stopped by a
// signal (state T in /proc/PID/task/TID/stat).
func allThreadsStopped(pid int) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // the thread exited
		}
		s := string(b) // pid (comm) state ...
		if i := strings.LastIndexByte(s, ')'); i < 0 || i+2 >= len(s) || s[i+2] != 'T' {
			return fmt.Errorf("thread %s of %d is not stopped yet", task.Name(), pid)
		}
	}
	return nil
}
