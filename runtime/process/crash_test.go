package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/process"
)

// runBrokerDying starts spec from a separate broker process that SIGKILLs
// itself at the given launch stage, as kill -9 of a broker would.
func runBrokerDying(t *testing.T, dir, stage string, spec runtime.Spec) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]runtime.Spec{spec})
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envBrokerDir+"="+dir, envBrokerSpecs+"="+string(b), envBrokerDieAt+"="+stage)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("broker process should have been killed at %s: %v: %s", stage, err, out)
	}
}

// marked lists the live pids whose environment carries dir's marker, as an
// operator (or the system tests) would look for them.
func marked(t *testing.T, dir string) []int {
	t.Helper()
	abs, _ := filepath.Abs(dir)
	want := process.EnvStateDir + "=" + abs + "\x00"
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !strings.Contains(string(env)+"\x00", want) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			continue // a zombie has exited
		}
		out = append(out, pid)
	}
	return out
}

func waitNoneMarked(t *testing.T, dir string) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if left := marked(t, dir); len(left) != 0 {
			return fmt.Errorf("orphan processes of %s: %v", dir, left)
		}
		return nil
	})
}

// A broker killed after recording a launch but before starting it leaves
// nothing running; the agent is still created and starts normally.
func TestBrokerKilledBeforeStart(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	t.Cleanup(func() { killAll(t, dir) })
	spec := testSpec(base, "a1")
	runBrokerDying(t, dir, "recorded", spec)
	if left := marked(t, dir); len(left) != 0 {
		t.Fatalf("processes after a kill before the start: %v", left)
	}
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	if st, err := rt.Inspect(ctx, "a1"); err != nil || st.State != runtime.StateCreated {
		t.Fatalf("after restart = %+v, %v; want created", st, err)
	}
	if st, err := rt.Start(ctx, "a1"); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("Start = %+v, %v", st, err)
	}
	waitMarker(t, rt, "a1")
	if err := rt.Delete(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	waitNoneMarked(t, dir)
}

// A broker killed after starting a process but before recording its pid:
// the restarted runtime adopts it (it is the launch the record names), so
// it is reported running and Delete kills it. It used to run on unseen.
func TestBrokerKilledDuringStart(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	t.Cleanup(func() { killAll(t, dir) })
	spec := testSpec(base, "a1")
	runBrokerDying(t, dir, "started", spec)
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	st, err := rt.Inspect(ctx, "a1")
	if err != nil || st.State != runtime.StateRunning || st.StartedAt.IsZero() {
		t.Fatalf("after restart = %+v, %v; want the started process adopted as running", st, err)
	}
	if left := marked(t, dir); len(left) == 0 || !contains(left, pidOf(t, dir, "a1")) {
		t.Fatalf("adopted pid %d is not among the marked processes %v", pidOf(t, dir, "a1"), left)
	}
	waitMarker(t, rt, "a1")
	// The adopted agent's exit status is still recorded by its wrapper.
	finish(t, rt, spec, 3)
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		st, err := rt.Inspect(ctx, "a1")
		if err != nil {
			return err
		}
		if st.State != runtime.StateExited || st.ExitCode == nil || *st.ExitCode != 3 {
			return fmt.Errorf("the adopted agent is %+v, want exited with code 3", st)
		}
		return nil
	})
	if err := rt.Delete(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	waitNoneMarked(t, dir)
}

// A process whose agent has no record any more (its broker died in the
// middle of a Delete) is killed when the runtime restarts.
func TestRestartKillsProcessesWithoutRecord(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	t.Cleanup(func() { killAll(t, dir) })
	runBroker(t, dir, testSpec(base, "gone"), testSpec(base, "kept"))
	if err := os.RemoveAll(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	kept := pidOf(t, dir, "kept")
	left := marked(t, dir)
	if len(left) == 0 {
		t.Fatal("the kept agent's processes are gone too")
	}
	for _, p := range left {
		// The kept agent's wrapper and its command share the marker.
		if !isInGroup(p, kept) {
			t.Fatalf("marked processes after restart %v: pid %d is not the kept agent's (%d)", left, p, kept)
		}
	}
	if st, err := rt.Inspect(context.Background(), "kept"); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("kept = %+v, %v", st, err)
	}
}

// Delete kills what the agent left running in the background after its
// main process ended; it used to kill only a live wrapper's group.
func TestDeleteKillsLeftoverChildren(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(); killAll(t, dir) })
	ctx := context.Background()
	spec := testSpec(base, "bg")
	// The child leaves the wrapper's session and group; only the marker
	// still ties it to the agent.
	spec.Command = []string{"/bin/sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo spawned"}
	st := runToExit(t, rt, spec)
	if st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("agent = %+v", st)
	}
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if len(marked(t, dir)) == 0 {
			return errors.New("no marked process: the background child has not started")
		}
		return nil
	})
	if err := rt.Delete(ctx, "bg"); err != nil {
		t.Fatal(err)
	}
	waitNoneMarked(t, dir)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// isInGroup reports whether pid is in process group pgid.
func isInGroup(pid, pgid int) bool {
	g, err := syscall.Getpgid(pid)
	return err == nil && g == pgid
}
