package system

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// demoPort is fixed in scripts/demo.sh.
const demoPort = 8780

// TestWorkstationDemo runs the README's main job as a user would:
// scripts/demo.sh starts a workstation Hub (process runtime), starts the
// demo agent and follows its logs to the end. Then the agent must be
// listed, and stopping the Hub the way the script says must end it.
func TestWorkstationDemo(t *testing.T) {
	requireBinary(t)
	if _, err := exec.LookPath("curl"); err != nil {
		skipOrFail(t, "scripts/demo.sh needs curl: %v", err)
	}
	// The script reuses whatever Hub answers on 8780, so another Hub there
	// would make this test drive someone else's Hub: refuse.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", demoPort))
	if err != nil {
		skipOrFail(t, "scripts/demo.sh needs port %d, which is busy: %v", demoPort, err)
	}
	ln.Close()
	t.Parallel() // the others use free ports and their own homes

	h := newHost(t, "demo")
	pidFile := filepath.Join(h.home, "hub.pid")
	// The script backgrounds the Hub with nohup, so the Hub is not our
	// child: end it by the PID it recorded, whatever happens below.
	t.Cleanup(func() {
		if pid := readPID(pidFile); pid > 0 && !processGone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(h.home, "hub.log")); err == nil {
				t.Logf("--- hub.log ---\n%s", b)
			}
		}
	})

	out := runDemo(t, h)
	for _, want := range []string{"hello from a Scion agent", "demo agent done"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo.sh output lacks %q:\n%s", want, out)
		}
	}

	var agents []api.Agent
	h.mustScionJSON(t, &agents, "list")
	var demo *api.Agent
	for i := range agents {
		if agents[i].Slug == "demo" {
			demo = &agents[i]
		}
	}
	if demo == nil {
		t.Fatalf("scion list -o json after the demo has no agent \"demo\": %+v", agents)
	}
	t.Logf("demo agent after the script: phase=%s container=%s broker=%s", demo.Phase, demo.ContainerStatus, demo.BrokerName)
	// The script's `scion logs demo -f` returned because the agent ended:
	// the Hub knows that by then (the broker reports before the end).
	if demo.Phase != api.PhaseStopped || demo.ContainerStatus != api.ContainerExited {
		t.Errorf("right after `scion logs demo -f` returned, the demo agent is listed as %s/%s, want %s/%s",
			demo.Phase, demo.ContainerStatus, api.PhaseStopped, api.ContainerExited)
	}

	// Delete the demo agent so no container or process is left behind.
	h.mustScion(t, "delete", "demo")

	// Stop it as the script tells the user: kill $(cat $SCION_HOME/hub.pid).
	pid := readPID(pidFile)
	if pid <= 0 {
		t.Fatalf("no PID in %s", pidFile)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	took := wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		if !processGone(pid) {
			return fmt.Errorf("hub pid %d still running after SIGTERM", pid)
		}
		return nil
	})
	t.Logf("the Hub exited %v after SIGTERM", took.Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(h.home, "workstation.json")); err == nil {
		t.Errorf("workstation.json still exists after the Hub stopped: the CLI would keep using a Hub that is gone")
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", demoPort), time.Second); err == nil {
		c.Close()
		t.Errorf("port %d still accepts connections after the Hub exited", demoPort)
	}
}

// runDemo runs scripts/demo.sh with the host's SCION_HOME and the binary
// under test, and returns its output.
func runDemo(t *testing.T, h *host) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(moduleRoot, "scripts", "demo.sh"))
	cmd.Dir = moduleRoot
	cmd.Env = append(h.env(), "SCION_BIN="+scionBin)
	// A file, not a pipe: the Hub the script leaves running must not hold
	// our output open (it redirects its own, but do not depend on that).
	logPath := filepath.Join(h.logs, "demo.sh.out")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	runErr := cmd.Run()
	f.Close()
	b, _ := os.ReadFile(logPath)
	if runErr != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", runErr, b)
	}
	t.Logf("scripts/demo.sh took %v", time.Since(start).Round(time.Millisecond))
	return string(b)
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
