package system

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// TestStartRetriesARefusedCreate: `scion start a1 --broker bx` that the
// broker refuses (the generic harness needs a command) leaves a1 in phase
// error with no container; the user's retry `scion start a1 -- CMD` is a
// create with the new command, on the broker the failed create chose, and
// a1 runs that command. An agent whose container did exist is never
// replaced that way: its start warns that the command is ignored and says
// how to replace it, and the agent keeps its ID and command.
func TestStartRetriesARefusedCreate(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	processBroker(t, hub, token, "bx")
	processBroker(t, hub, token, "by") // two: the Hub's selection alone picks none
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"bx": api.BrokerOnline, "by": api.BrokerOnline})
	})
	t.Cleanup(func() { // the process runtime's agents are real processes
		for _, a := range []string{"a1", "a2"} {
			_, _, _ = admin.scion("delete", a)
		}
	})

	_, stderr, err := admin.scion("start", "a1", "--broker", "bx")
	if err == nil || !strings.Contains(stderr, "needs a command") {
		t.Fatalf("start without a command: err %v, stderr %q; want the broker's refusal", err, stderr)
	}
	failed := admin.agentNamed(t, "a1")
	if failed.Phase != api.PhaseError {
		t.Fatalf("a1 after the refused create: phase %s, want error", failed.Phase)
	}

	out, stderr, err := admin.scion("start", "a1", "--", "sh", "-c", "echo retried-with-a-command; exec sleep 1000")
	if err != nil {
		t.Fatalf("the retry with a command: %v", err)
	}
	if strings.Contains(stderr, "ignoring") {
		t.Fatalf("the retry ignored the command: %q", stderr)
	}
	t.Logf("retry: %s%s", out, stderr)
	var a1 api.Agent
	wait.Eventually(t, 20*time.Second, pollInterval, func() error {
		a1 = admin.agentNamed(t, "a1")
		if a1.Phase != api.PhaseRunning {
			return fmt.Errorf("a1 is %s (%s), want running", a1.Phase, a1.StatusMessage)
		}
		logs, _, err := admin.scion("logs", "a1")
		if err != nil {
			return err
		}
		if !strings.Contains(logs, "retried-with-a-command") {
			return fmt.Errorf("a1's output %q lacks the new command's line", logs)
		}
		return nil
	})
	if a1.BrokerName != "bx" {
		t.Fatalf("the retry ran on %s, want bx (the failed create's broker)", a1.BrokerName)
	}
	if got := strings.Join(a1.Command, " "); !strings.HasPrefix(got, "sh -c echo retried") {
		t.Fatalf("a1's command is %q, want the retry's", got)
	}

	// An agent whose container existed: stopped, then started with
	// another command. Nothing replaces it.
	admin.mustScion(t, "start", "a2", "--broker", "bx", "--", "sleep", "1000")
	before := admin.agentNamed(t, "a2")
	admin.mustScion(t, "stop", "a2")
	_, stderr, err = admin.scion("start", "a2", "--", "sh", "-c", "echo replaced; exec sleep 1000")
	if err != nil {
		t.Fatalf("start of the stopped a2: %v", err)
	}
	if !strings.Contains(stderr, "ignoring the command") || !strings.Contains(stderr, "scion delete a2") {
		t.Fatalf("start of an existing a2 with a command: stderr %q; want the warning that says how to replace it", stderr)
	}
	after := admin.agentNamed(t, "a2")
	if after.ID != before.ID || strings.Join(after.Command, " ") != "sleep 1000" {
		t.Fatalf("a2 after the start with another command: ID %s command %q; want ID %s and its own command", after.ID, after.Command, before.ID)
	}
}
