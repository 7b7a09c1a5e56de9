package process_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/process"
	"github.com/scion-go/scion/runtime/runtimetest"
)

// agentScript is the suite's test agent as a shell script run in its
// WorkDir: it prints the marker ($1), then blocks opening a FIFO (costing
// no CPU, unlike a sleep loop) until finish writes an exit code into it.
const agentScript = `rm -f ctl && mkfifo ctl || exit 90
echo "$1"
read code <ctl
echo "$1 finished"
exit "$code"`

func command(marker string, ignoreTerm bool) []string {
	script := agentScript
	if ignoreTerm {
		script = "trap '' TERM\n" + script
	}
	return []string{"/bin/sh", "-c", script, "test-agent", marker}
}

// finish makes a serving test agent exit with code (its control FIFO).
var finish = runtimetest.FinishFIFO

// newRuntime returns a runtime over a fresh state directory. Its cleanup
// kills whatever agents are left there through a fresh Runtime, so that no
// process outlives the test even if the suite's runtime was closed.
func newRuntime(t *testing.T) runtime.Runtime {
	t.Helper()
	dir := t.TempDir()
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		killAll(t, dir)
	})
	return rt
}

func killAll(t *testing.T, dir string) {
	rt, err := process.New(dir)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer rt.Close()
	ctx := context.Background()
	inv, err := rt.Inventory(ctx)
	if err != nil {
		t.Errorf("cleanup: %v", err)
	}
	for _, st := range inv {
		if err := rt.Delete(ctx, st.AgentID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("cleanup: %v", err)
		}
	}
}

func TestConformance(t *testing.T) {
	runtimetest.Run(t, newRuntime, runtimetest.Options{
		Command:         command,
		Finish:          finish,
		SupportsSuspend: true,
		Restart: func(t *testing.T, old runtime.Runtime) runtime.Runtime {
			rt, err := process.New(old.(*process.Runtime).StateDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Close() })
			return rt
		},
		// The process runtime runs agents on this host, so the host's shell
		// and cat serve as the exec and echo commands.
		ExecCommand: func(out string, code int) []string {
			return []string{"/bin/sh", "-c", `echo "$0"; exit "$1"`, out, strconv.Itoa(code)}
		},
		EchoCommand: []string{"cat"},
	})
}
