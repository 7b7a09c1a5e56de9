package kubernetes_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
	"github.com/scion-go/scion/runtime/runtimetest"
)

// TestConformanceWithLocalKubelet runs the whole conformance suite (but
// suspend, which Kubernetes lacks, and attach, which the runtime does not
// implement) through the
// real API server, with localKubelet running the test agent: start, the
// marker in pods/log, following it, a graceful Stop and the kill after the
// grace period, exit codes as events, re-adoption by a new runtime, exec
// with its exit code and standard input through pods/exec. The
// workspaces are on an "NFS share" mounted at / so that the suite's host
// workspace directories are the agents' working directories, as they are
// on a real cluster with the broker and the nodes mounting one export.
func TestConformanceWithLocalKubelet(t *testing.T) {
	n := newNS(t)
	agent := testAgent(t)
	startLocalKubelet(t, n, "/")
	cfg := n.brokerIdentity(t, "scion-broker")
	const broker = "broker-rtt-kubelet"
	settings := k8srt.Settings{Namespace: n.name, NFSPVName: "share-" + n.name, NFSMountPath: "/"}
	newRuntime := func(t *testing.T) runtime.Runtime {
		return n.runtimeAs(t, cfg, broker, func(o *k8srt.Options) { o.Defaults = settings })
	}
	runtimetest.Run(t, newRuntime, runtimetest.Options{
		BrokerID: broker,
		Command: func(marker string, ignoreTerm bool) []string {
			cmd := []string{agent, "serve", marker, "-ctl", "ctl"}
			if ignoreTerm {
				cmd = append(cmd, "-ignore-term")
			}
			return cmd
		},
		Finish:       runtimetest.FinishFIFO,
		LogsPerStart: true,
		ExecCommand: func(out string, code int) []string {
			return []string{agent, "exit", strconv.Itoa(code), out}
		},
		EchoCommand: []string{agent, "echo"},
		Restart: func(t *testing.T, _ runtime.Runtime) runtime.Runtime {
			return newRuntime(t)
		},
	})
}

var (
	agentOnce sync.Once
	agentBin  string
	agentErr  error
)

// testAgent builds the Docker runtime's test agent once, for localKubelet
// to run.
func testAgent(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scion-k8s-agent")
		if err != nil {
			agentErr = err
			return
		}
		agentBin = filepath.Join(dir, "testagent")
		cmd := exec.Command("go", "build", "-o", agentBin, "../docker/internal/testagent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = err
			t.Logf("%s", out)
		}
	})
	if agentErr != nil {
		t.Fatalf("build test agent: %v", agentErr)
	}
	return agentBin
}
