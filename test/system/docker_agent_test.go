package system

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// TestDockerEchoAgent drives the agent the README suggests trying,
// `scion agent-demo --echo --stay`, as a user would from a shell:
//
//   - `echo line | scion attach NAME` must show the agent's answer: the CLI
//     keeps reading the agent's output for a moment after its input ends
//     (attachLinger in cli/exec.go) precisely so that piped input gets its
//     answers;
//   - `scion stop NAME` must end it promptly: the agent is told to stop
//     (SIGTERM) and has nothing to finish.
func TestDockerEchoAgent(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	h := newHost(t, "echo")
	startDockerWorkstation(t, h, cl)
	var echoer api.Agent
	if err := h.scionJSONCmd(&echoer, "start", "echoer", "--", "scion", "agent-demo", "--echo", "--stay", "--steps", "0"); err != nil {
		t.Fatal(err)
	}
	// The agent is ready to echo once its greeting is out.
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		out, _, err := h.scion("logs", "echoer")
		if err == nil && !strings.Contains(out, "demo agent done") {
			err = fmt.Errorf("no greeting yet: %q", out)
		}
		return err
	})

	t.Run("piped attach shows the answers", func(t *testing.T) {
		const tries = 10
		var lost []string
		for i := range tries {
			line := fmt.Sprintf("piped line %d", i)
			out, errOut, code, err := h.scionCode(strings.NewReader(line+"\n"), "attach", "echoer")
			if err != nil || code != 0 {
				t.Fatalf("printf '%s\\n' | scion attach echoer: exit %d (%v), stderr %q", line, code, err, errOut)
			}
			if !strings.Contains(out, "agent got: "+line) {
				lost = append(lost, fmt.Sprintf("%q -> stdout %q", line, out))
			}
		}
		logs, _, _ := h.scion("logs", "echoer")
		if len(lost) > 0 {
			t.Errorf("BUG (runtime/docker/exec.go, attachment.CloseWrite): in %d of %d runs of `printf 'LINE\\n' | scion attach echoer` the agent's answer never reached the attach output, "+
				"although the agent received every line (its logs: %q). CloseWrite half-closes the engine's attach connection, and the engine then closes that attach's stdout and stderr at once "+
				"(moby container/stream/attach.go: \"No matter what, when stdin is closed (io.Copy unblock), close stdout and stderr\", as the container is not StdinOnce; the agent's own stdin stays open), "+
				"so whatever the agent answers after the end of input is dropped and the CLI's linger has nothing left to wait for. Lost: %s",
				len(lost), tries, logs, strings.Join(lost, "; "))
		}
	})

	t.Run("stop is prompt", func(t *testing.T) {
		began := time.Now()
		var a api.Agent
		h.mustScionJSON(t, &a, "stop", "echoer")
		took := time.Since(began)
		cs := agentContainers(t, cl, echoer.ID)
		if len(cs) != 1 {
			t.Fatalf("echoer has %d containers", len(cs))
		}
		c := inspect(t, cl, cs[0].ID)
		// What is measured is the agent's own exit, as the engine recorded
		// it: that is what SIGTERM must bring about promptly. The rest of the
		// command's time is mostly the engine's work after the exit (the
		// container's streams, network and mounts): about 0.1 s on a quiet
		// host, 2 s at load 15 with the suite's other containers churning
		// beside it while the agent had ended within 0.8 s, and 9 s in CI.
		// No agent can shorten it; it is reported, not judged.
		fin, err := time.Parse(time.RFC3339Nano, c.State.FinishedAt)
		if err != nil {
			t.Fatalf("container FinishedAt %q: %v", c.State.FinishedAt, err)
		}
		ended := fin.Sub(began)
		t.Logf("MEASURED: scion stop of an agent-demo --echo agent took %v; its process ended %v after the stop began, exit code %d",
			took.Round(time.Millisecond), ended.Round(time.Millisecond), c.State.ExitCode)
		if a.Phase != api.PhaseStopped {
			t.Errorf("after stop: phase %s (%s)", a.Phase, a.StatusMessage)
		}
		if ended > 5*time.Second || c.State.ExitCode != 0 {
			t.Errorf("BUG (cli/agent_demo.go, the --echo loop): after `scion stop echoer` the agent's process ended only %v later with exit code %d (137: killed when the 10s grace ran out). "+
				"cli.Execute turns SIGTERM into a cancelled context (signal.NotifyContext), which disables the default exit on SIGTERM, so a loop that never looks at that context "+
				"(bufio.Scanner on stdin) cannot be stopped gracefully; without --echo the agent ends within milliseconds and exits 0",
				ended.Round(time.Millisecond), c.State.ExitCode)
		}
	})
	h.mustScion(t, "delete", "echoer")
}

// TestDockerAgentStartsChild: an agent whose command runs `scion start
// kid` inside its container (the demo's --start-child) creates a second
// agent through the Hub with no --hub flag: the endpoint, token and
// project come from the agent's environment, the image from the Hub's
// defaults.
func TestDockerAgentStartsChild(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	h := newHost(t, "parent")
	ws := startDockerWorkstation(t, h, cl)
	h.mustScion(t, "project", "create", "family", "--sharing-mode", api.SharingEmptyPerAgent)
	h.mustScion(t, "runtime-broker", "provide", "--project", "family")

	var parent api.Agent
	if err := h.scionJSONCmd(&parent, "start", "parent", "--project", "family", "--", "scion", "agent-demo", "--start-child", "kid", "--stay", "--steps", "0"); err != nil {
		t.Fatal(err)
	}
	if parent.Phase != api.PhaseRunning {
		t.Fatalf("parent: phase %s (%s)", parent.Phase, parent.StatusMessage)
	}
	var kid api.Agent
	took := wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		m, err := h.agentsBySlug()
		if err != nil {
			return err
		}
		k, ok := m["kid"]
		if !ok {
			return fmt.Errorf("no agent kid yet (parent is %s: %s)", m["parent"].Phase, m["parent"].StatusMessage)
		}
		if k.Phase != api.PhaseRunning {
			return fmt.Errorf("kid is %s (%s)", k.Phase, k.StatusMessage)
		}
		kid = k
		return nil
	})
	t.Logf("MEASURED: the child agent was running %v after the parent's start answered", took.Round(time.Millisecond))
	if kid.ParentAgentID != parent.ID || kid.CreatedBy != "agent:"+parent.ID {
		t.Errorf("kid: parentAgentId %q createdBy %q; want the parent %s", kid.ParentAgentID, kid.CreatedBy, parent.ID)
	}
	if kid.ProjectID != parent.ProjectID || kid.BrokerID != ws.brokerID || kid.Image != docker.DemoImage {
		t.Errorf("kid: project %s broker %s image %q; want the parent's project %s, broker %s, the default image %s",
			kid.ProjectID, kid.BrokerID, kid.Image, parent.ProjectID, ws.brokerID, docker.DemoImage)
	}
	cs := agentContainers(t, cl, kid.ID)
	if len(cs) != 1 || cs[0].State != "running" || cs[0].Labels[runtime.LabelBrokerID] != ws.brokerID {
		t.Errorf("kid's containers on the engine: %+v; want one running, of broker %s", cs, ws.brokerID)
	}
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		out, _, err := h.scion("logs", "parent", "--project", "family")
		if err == nil && !strings.Contains(out, "started child agent kid through the hub") {
			err = fmt.Errorf("parent's logs lack the child's start: %q", out)
		}
		return err
	})
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		out, _, err := h.scion("logs", "kid", "--project", "family")
		if err == nil && !strings.Contains(out, demoGreeting) {
			err = fmt.Errorf("kid's logs lack the greeting: %q", out)
		}
		return err
	})
	h.mustScion(t, "delete", "kid", "--project", "family")
	h.mustScion(t, "delete", "parent", "--project", "family")
	if cs := brokerContainers(t, cl, ws.brokerID); len(cs) != 0 {
		t.Errorf("after deleting both agents the engine still has %v", containerNames(cs))
	}
}
