package runtimetest

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
)

// FinishFIFO is an Options.Finish for a test agent that reads its exit
// code from the FIFO "ctl" in its workspace, a host directory (the docker,
// kubelet and process runtimes' agents). Opening the FIFO non-blocking
// fails until the agent has opened it for reading, so it retries until
// then.
func FinishFIFO(t *testing.T, _ runtime.Runtime, spec runtime.Spec, code int) {
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
