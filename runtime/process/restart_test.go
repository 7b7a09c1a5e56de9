package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/process"
)

// Environment of the test binary re-run as a short-lived "broker".
const (
	envBrokerDir   = "SCION_PROCESS_TEST_BROKER_DIR"
	envBrokerSpecs = "SCION_PROCESS_TEST_BROKER_SPECS"
	// envBrokerDieAt makes the broker SIGKILL itself at that launch stage.
	envBrokerDieAt = "SCION_PROCESS_TEST_BROKER_DIE_AT"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envBrokerDir); dir != "" {
		os.Exit(brokerMain(dir, os.Getenv(envBrokerSpecs)))
	}
	os.Exit(m.Run())
}

// brokerMain creates and starts the given agents and exits without any
// cleanup, like a broker that crashes right after.
func brokerMain(dir, specsJSON string) int {
	var specs []runtime.Spec
	if err := json.Unmarshal([]byte(specsJSON), &specs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rt, err := process.New(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if at := os.Getenv(envBrokerDieAt); at != "" {
		process.SetTestHook(func(stage string) {
			if stage == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		})
	}
	ctx := context.Background()
	for _, spec := range specs {
		if _, err := rt.Create(ctx, spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if _, err := rt.Start(ctx, spec.AgentID); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	return 0
}

// runBroker starts specs from a separate broker process that then exits,
// so the agents are not this test process's children: nothing here can
// wait for them, exactly as after a real broker restart.
func runBroker(t *testing.T, dir string, specs ...runtime.Spec) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(specs)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envBrokerDir+"="+dir, envBrokerSpecs+"="+string(b))
	// The broker must exit while its agents live on; Output would hang if
	// an agent had inherited the pipe.
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("broker process: %v: %s", err, out)
	}
}

func testSpec(base, id string) runtime.Spec {
	return runtime.Spec{
		AgentID: id, RunID: "run-" + id, BrokerID: "b1", ProjectID: "p1",
		Command: command("marker-"+id, false),
		WorkDir: filepath.Join(base, id),
	}
}

func waitMarker(t *testing.T, rt runtime.Runtime, id string) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if out := readLogs(t, rt, id); !strings.Contains(out, "marker-"+id+"\n") {
			return fmt.Errorf("%s logged %q, want its marker", id, out)
		}
		return nil
	})
}

func readLogs(t *testing.T, rt runtime.Runtime, id string) string {
	t.Helper()
	r, err := rt.Logs(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAdoptAfterBrokerExit is re-adoption for real: the agents' broker
// process is gone, so exit codes can only come from the wrapper.
func TestAdoptAfterBrokerExit(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	t.Cleanup(func() { killAll(t, dir) })
	stopped, finished, killed := testSpec(base, "stopped"), testSpec(base, "finished"), testSpec(base, "killed")
	runBroker(t, dir, stopped, finished, killed)

	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	for _, spec := range []runtime.Spec{stopped, finished, killed} {
		waitMarker(t, rt, spec.AgentID)
		st, err := rt.Inspect(ctx, spec.AgentID)
		if err != nil || st.State != runtime.StateRunning {
			t.Fatalf("%s after broker exit = %+v, %v; want running", spec.AgentID, st, err)
		}
	}

	// The wrapper survives SIGTERM to record the agent's 128+15.
	st, err := rt.Stop(ctx, stopped.AgentID, time.Minute)
	if err != nil || st.State != runtime.StateExited || st.ExitCode == nil || *st.ExitCode != 143 {
		t.Fatalf("Stop of adopted agent = %+v (code %v), %v; want exited 143", st, st.ExitCode, err)
	}

	// An adopted agent ending by itself is noticed by polling.
	// (The Stop above is reported too; skip that.)
	finish(t, rt, finished, 4)
	timeout := time.After(30 * time.Second)
	for got := false; !got; {
		select {
		case ev := <-rt.Events():
			if ev.Status.AgentID != finished.AgentID {
				continue
			}
			if ev.Status.State != runtime.StateExited || ev.Status.ExitCode == nil || *ev.Status.ExitCode != 4 {
				t.Fatalf("event = %+v, want exited 4", ev.Status)
			}
			got = true
		case <-timeout:
			t.Fatal("no exit event for the adopted agent")
		}
	}

	// Killed behind our back, the wrapper cannot record anything: exited,
	// code unknown.
	syscall.Kill(-pidOf(t, dir, killed.AgentID), syscall.SIGKILL)
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		st, err := rt.Inspect(ctx, killed.AgentID)
		if err != nil {
			return err
		}
		if st.State != runtime.StateExited {
			return fmt.Errorf("the killed agent is %s, want exited", st.State)
		}
		return nil
	})
	st, _ = rt.Inspect(ctx, killed.AgentID)
	if st.ExitCode != nil || st.Message == "" {
		t.Fatalf("externally killed agent = code %d message %q, want unknown code with a message", *st.ExitCode, st.Message)
	}
}

// pidOf reads the agent's pid from its record.
func pidOf(t *testing.T, dir, id string) int {
	t.Helper()
	var rec struct {
		Proc struct{ Pid int } `json:"proc"`
	}
	b, err := os.ReadFile(filepath.Join(dir, id, "record.json"))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil || rec.Proc.Pid <= 1 {
		t.Fatalf("record of %s: pid %d, %v", id, rec.Proc.Pid, err)
	}
	return rec.Proc.Pid
}
