package docker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/runtimetest"
)

// finish makes a serving test agent exit with code by writing it into
// its control FIFO, which lives in its workspace: bind-mounted, so the
// host end works as for a local process. Opening it non-blocking fails
// until the agent has opened it for reading, so retry until then.
func finish(t *testing.T, _ runtime.Runtime, spec runtime.Spec, code int) {
	t.Helper()
	fifo := filepath.Join(spec.WorkDir, "ctl")
	var f *os.File
	wait.Eventually(t, 30*time.Second, wait.Interval, func() error {
		var err error
		if f, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err != nil {
			return fmt.Errorf("finish %s: the agent has not opened its FIFO: %w", spec.AgentID, err)
		}
		return nil
	})
	_, err := f.WriteString(strconv.Itoa(code) + "\n")
	f.Close()
	if err != nil {
		t.Fatalf("finish %s: %v", spec.AgentID, err)
	}
}

func TestConformance(t *testing.T) {
	needEngine(t)
	// A broker ID of this run's: another test run may share the engine.
	opts := docker.Options{BrokerID: testPrefix + "-rtt", Client: engine}
	runtimetest.Run(t, func(t *testing.T) runtime.Runtime {
		return newBrokerRuntime(t, opts)
	}, runtimetest.Options{
		Image:    testImage,
		BrokerID: opts.BrokerID,
		Command: func(marker string, ignoreTerm bool) []string {
			cmd := []string{agentPath, "serve", marker}
			if ignoreTerm {
				cmd = append(cmd, "-ignore-term")
			}
			return cmd
		},
		Finish:          finish,
		SupportsSuspend: true,
		Restart: func(t *testing.T, old runtime.Runtime) runtime.Runtime {
			rt, err := docker.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Close() })
			return rt
		},
		ExecCommand: func(out string, code int) []string {
			return []string{agentPath, "exit", strconv.Itoa(code), out}
		},
		EchoCommand: []string{agentPath, "echo"},
	})
}
