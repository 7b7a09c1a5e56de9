package system

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// demoGreeting is the first line `scion agent-demo` prints.
const demoGreeting = "hello from a Scion agent in /workspace"

// dockerAgent is one agent a Docker test starts, and what it learns of it.
type dockerAgent struct {
	name, project, mode string
	echo                bool      // runs agent-demo --echo (for attach)
	port                bool      // publishes container port 8080 (scion start --port)
	a                   api.Agent // as the Hub last showed it
}

// agentPort is the container port the agents that publish one ask for.
const agentPort = 8080

// workstationPorts is the workstation broker's port pool: the broker
// default, as the workstation has no setting for it.
var workstationPorts = broker.DefaultPortRange

// command is the agent's command: the demo, staying up, echoing its
// input if echo.
func (ag *dockerAgent) command() []string {
	cmd := []string{"scion", "agent-demo", "--stay", "--steps", "1", "--interval", "10ms"}
	if ag.echo {
		cmd = append(cmd, "--echo")
	}
	return cmd
}

// TestDockerTenAgentsFourModes: a workstation Hub whose local broker runs
// agents on the real Docker Engine starts ten agents at once across the
// four sharing modes; each runs, and logs, exec and attach work through the
// Hub; every workspace is what its mode promises, seen from inside the
// container; stop, start, restart, suspend and resume act on the same
// container; deleting the agents leaves no container and no agent
// directory behind.
func TestDockerTenAgentsFourModes(t *testing.T) {
	cl := requireDocker(t)
	requireGit(t)
	requireDemoImage(t)
	probe := requireProbe(t)
	t.Parallel()

	h := newHost(t, "ws10")
	remote := makeGitRemote(t, h.user) // under the workstation's default root
	ws := startDockerWorkstation(t, h, cl)
	dataDir := filepath.Join(h.home, "broker")

	modes := []struct {
		project, mode string
		n             int
	}{
		{"wt", api.SharingWorktreePerAgent, 3},
		{"sh", api.SharingSharedWorkspace, 3},
		{"cl", api.SharingClonePerAgent, 2},
		{"em", api.SharingEmptyPerAgent, 2},
	}
	projectIDs := map[string]string{}
	var agents []*dockerAgent
	for _, m := range modes {
		args := []string{"project", "create", m.project, "--sharing-mode", m.mode}
		if m.mode != api.SharingEmptyPerAgent {
			args = append(args, "--git-remote", remote)
		}
		var p api.Project
		h.mustScionJSON(t, &p, args...)
		if p.SharingMode != m.mode {
			t.Fatalf("project %s has sharing mode %q, want %q", m.project, p.SharingMode, m.mode)
		}
		projectIDs[m.project] = p.ID
		h.mustScion(t, "runtime-broker", "provide", "--project", m.project)
		for i := 1; i <= m.n; i++ {
			// Every other agent echoes its input, at least one per mode.
			// Only those are attached to: agent-demo --echo does not end
			// on SIGTERM (see TestDockerEchoAgent), so each stop of one
			// costs the whole 10s grace.
			// Every third publishes a port, again at least one per mode.
			agents = append(agents, &dockerAgent{name: fmt.Sprintf("%s-%d", m.project, i), project: m.project, mode: m.mode,
				echo: len(agents)%2 == 0, port: len(agents)%3 == 0})
		}
	}

	// Ten concurrent `scion start`, one process each.
	began := time.Now()
	forEach(t, agents, func(ag *dockerAgent) error {
		var a api.Agent
		args := []string{"start", ag.name, "--project", ag.project}
		if ag.port {
			args = append(args, "--port", fmt.Sprint(agentPort))
		}
		if err := h.scionJSONCmd(&a, append(append(args, "--"), ag.command()...)...); err != nil {
			return err
		}
		if a.Phase != api.PhaseRunning || a.ContainerStatus != api.ContainerRunning {
			return fmt.Errorf("scion start %s answered phase %s, container %s (%s)", ag.name, a.Phase, a.ContainerStatus, a.StatusMessage)
		}
		ag.a = a
		return nil
	})
	t.Logf("MEASURED: 10 concurrent `scion start` (4 sharing modes, docker) all answered running after %v", time.Since(began).Round(time.Millisecond))

	// The Hub and the engine agree: ten agents running, one container each,
	// labelled for this broker, with the broker's scion binary mounted
	// read-only.
	bySlug, err := h.agentsBySlug()
	if err != nil {
		t.Fatal(err)
	}
	if len(bySlug) != len(agents) {
		t.Fatalf("the Hub lists %d agents, want %d: %v", len(bySlug), len(agents), slices.Collect(maps.Keys(bySlug)))
	}
	containerOf := map[string]string{} // agent name -> container ID
	for _, ag := range agents {
		a := bySlug[ag.name]
		if a.Phase != api.PhaseRunning || a.BrokerID != ws.brokerID || a.ProjectID != projectIDs[ag.project] {
			t.Errorf("agent %s: phase %s broker %s project %s; want running on %s in %s", ag.name, a.Phase, a.BrokerID, a.ProjectID, ws.brokerID, projectIDs[ag.project])
		}
		cs := agentContainers(t, cl, a.ID)
		if len(cs) != 1 {
			t.Fatalf("agent %s has %d containers, want 1", ag.name, len(cs))
		}
		c := inspect(t, cl, cs[0].ID)
		containerOf[ag.name] = c.ID
		lbl := c.Config.Labels
		switch {
		case !c.State.Running:
			t.Errorf("agent %s: container %s is %s", ag.name, c.ID[:12], c.State.Status)
		case lbl[runtime.LabelBrokerID] != ws.brokerID || lbl[runtime.LabelProjectID] != a.ProjectID || lbl[runtime.LabelRunID] != a.RunID:
			t.Errorf("agent %s: container labels %v do not name broker %s, project %s, run %s", ag.name, lbl, ws.brokerID, a.ProjectID, a.RunID)
		case !hasReadOnlyMount(c.Mounts, docker.ScionBinaryPath):
			t.Errorf("agent %s: no read-only mount at %s: %+v", ag.name, docker.ScionBinaryPath, c.Mounts)
		}
	}
	// Published ports: distinct host ports from the broker's pool, in the
	// container's label and its port bindings.
	hostPorts := map[int]string{}
	for _, ag := range agents {
		a := bySlug[ag.name]
		c := inspect(t, cl, containerOf[ag.name])
		if !ag.port {
			if len(a.Ports) != 0 || c.Config.Labels[docker.LabelPorts] != "" {
				t.Errorf("agent %s asked for no port but has %+v (label %q)", ag.name, a.Ports, c.Config.Labels[docker.LabelPorts])
			}
			continue
		}
		if len(a.Ports) != 1 || a.Ports[0].ContainerPort != agentPort || a.Ports[0].HostPort < workstationPorts[0] || a.Ports[0].HostPort > workstationPorts[1] {
			t.Errorf("agent %s: ports %+v, want container port %d on a host port in %v", ag.name, a.Ports, agentPort, workstationPorts)
			continue
		}
		hp := a.Ports[0].HostPort
		if other, dup := hostPorts[hp]; dup {
			t.Errorf("agents %s and %s both got host port %d", other, ag.name, hp)
		}
		hostPorts[hp] = ag.name
		ag.a.Ports = a.Ports
		want := fmt.Sprintf("%d:%d", agentPort, hp)
		bind := c.HostConfig.PortBindings[nat.Port(fmt.Sprintf("%d/tcp", agentPort))]
		if c.Config.Labels[docker.LabelPorts] != want || len(bind) != 1 || bind[0].HostPort != fmt.Sprint(hp) {
			t.Errorf("agent %s: label %s=%q and bindings %+v; want %q", ag.name, docker.LabelPorts, c.Config.Labels[docker.LabelPorts], bind, want)
		}
	}
	if n := len(brokerContainers(t, cl, ws.brokerID)); n != len(agents) {
		t.Errorf("the engine has %d containers of broker %s, want %d", n, ws.brokerID, len(agents))
	}
	assertRunningCount(t, h, "local", len(agents))

	// Logs through the Hub.
	forEach(t, agents, func(ag *dockerAgent) error {
		var failed error // scion logs failing ends the wait
		_, err := wait.Until(15*time.Second, 100*time.Millisecond, func() error {
			out, _, err := h.scion("logs", ag.name, "--project", ag.project)
			if err != nil {
				failed = err
				return nil
			}
			if !strings.Contains(out, demoGreeting) || !strings.Contains(out, "demo agent done") {
				return fmt.Errorf("scion logs %s: no greeting:\n%s", ag.name, out)
			}
			return nil
		})
		if failed != nil {
			return failed
		}
		return err
	})

	// Exec through the Hub: output and exit code, with the agent's
	// environment (its ID) and working directory.
	forEach(t, agents, func(ag *dockerAgent) error {
		out, errOut, code, err := h.scionCode(nil, "exec", ag.name, "--project", ag.project, "--", "scion", "agent-demo", "--steps", "0")
		if err != nil {
			return err
		}
		if code != 0 || !strings.Contains(out, demoGreeting) || !strings.Contains(out, "agent "+ag.a.ID) {
			return fmt.Errorf("scion exec %s -- scion agent-demo: exit %d, stdout %q, stderr %q; want 0, the greeting and the agent's ID", ag.name, code, out, errOut)
		}
		return nil
	})
	out, errOut, code, err := h.scionCode(nil, "exec", "em-1", "--project", "em", "--", "scion", "agent-demo", "--no-such-flag")
	if err != nil {
		t.Fatal(err)
	}
	if code != 2 || !strings.Contains(errOut, "unknown flag: --no-such-flag") {
		t.Errorf("scion exec em-1 -- scion agent-demo --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 and the usage error on stderr", code, out, errOut)
	}

	// Attach through the Hub: a line typed goes to the agent's stdin, its
	// answer comes back.
	var echoers, others []*dockerAgent
	for _, ag := range agents {
		if ag.echo {
			echoers = append(echoers, ag)
		} else {
			others = append(others, ag)
		}
	}
	forEach(t, echoers, func(ag *dockerAgent) error {
		return h.attachEcho(ag.name, ag.project, "ping from the test to "+ag.name)
	})

	// Workspaces, seen from inside each container with fsprobe (copied into
	// the agent's broker-local home, mounted at /home/agent).
	checkWorkspaces(t, h, dataDir, probe, projectIDs, agents)

	// Lifecycle through the Hub, every agent at once: stop, start, restart
	// act on the agent's one container; one agent is also suspended and
	// resumed.
	forEach(t, agents, func(ag *dockerAgent) error {
		return lifecycle(h, cl, ag, containerOf[ag.name])
	})
	var a api.Agent
	h.mustScionJSON(t, &a, "suspend", "sh-3", "--project", "sh")
	if c := inspect(t, cl, containerOf["sh-3"]); a.Phase != api.PhaseSuspended || !c.State.Paused {
		t.Errorf("after suspend: phase %s, container paused=%v; want suspended and paused", a.Phase, c.State.Paused)
	}
	h.mustScionJSON(t, &a, "resume", "sh-3", "--project", "sh")
	if c := inspect(t, cl, containerOf["sh-3"]); a.Phase != api.PhaseRunning || c.State.Paused || !c.State.Running {
		t.Errorf("after resume: phase %s, container %s paused=%v; want running", a.Phase, c.State.Status, c.State.Paused)
	}
	assertRunningCount(t, h, "local", len(agents))

	// Stop half of them, then delete all: running and stopped agents alike
	// leave nothing behind.
	forEach(t, others, func(ag *dockerAgent) error {
		_, _, err := h.scion("stop", ag.name, "--project", ag.project)
		return err
	})
	assertRunningCount(t, h, "local", len(agents)-len(others))
	forEach(t, agents, func(ag *dockerAgent) error {
		_, _, err := h.scion("delete", ag.name, "--project", ag.project)
		return err
	})
	if cs := brokerContainers(t, cl, ws.brokerID); len(cs) != 0 {
		t.Errorf("after deleting every agent the engine still has %d container(s) of broker %s: %v", len(cs), ws.brokerID, containerNames(cs))
	}
	if dirs := agentDirs(t, dataDir); len(dirs) != 0 {
		t.Errorf("after deleting every agent these agent directories remain: %v", dirs)
	}
	if m, err := h.agentsBySlug(); err != nil || len(m) != 0 {
		t.Errorf("after deleting every agent the Hub lists %v (err %v)", slices.Collect(maps.Keys(m)), err)
	}
	assertRunningCount(t, h, "local", 0)
	// No port stays allocated: the Hub shows none (there is no agent
	// left) and the engine binds none for this broker (no container
	// left); TestDockerBadInput checks the broker's pool itself by using
	// up a tiny one after deletes.
	// The worktree agents' branches had nothing beyond their base: gone.
	branches := gitOutput(t, "--git-dir="+filepath.Join(dataDir, "projects", projectIDs["wt"], "base", ".git"), "for-each-ref", "--format=%(refname)", "refs/heads/scion/")
	if strings.TrimSpace(branches) != "" {
		t.Errorf("after deleting the worktree agents their branches remain in the base clone:\n%s", branches)
	}
}

// lifecycle stops, starts and restarts one agent through the CLI and checks
// the Hub's phase and the engine's container after each step. It runs on
// its own goroutine, so it returns errors instead of failing the test.
func lifecycle(h *host, cl *client.Client, ag *dockerAgent, containerID string) error {
	state := func() (container.InspectResponse, error) {
		cs, err := listContainersErr(cl, runtime.LabelAgentID+"="+ag.a.ID)
		if err != nil {
			return container.InspectResponse{}, err
		}
		if len(cs) != 1 || cs[0].ID != containerID {
			return container.InspectResponse{}, fmt.Errorf("agent %s has containers %v, want only %s", ag.name, containerNames(cs), containerID[:12])
		}
		return inspectErr(cl, containerID)
	}
	step := func(action, wantPhase string, running bool) (container.InspectResponse, error) {
		var a api.Agent
		if err := h.scionJSON(&a, action, ag.name, "--project", ag.project); err != nil {
			return container.InspectResponse{}, err
		}
		if a.Phase != wantPhase {
			return container.InspectResponse{}, fmt.Errorf("scion %s %s: phase %s (%s), want %s", action, ag.name, a.Phase, a.StatusMessage, wantPhase)
		}
		// A stopped agent gives its host ports back; a started one takes
		// the same ones again.
		wantPorts := ag.a.Ports
		if !running {
			wantPorts = nil
		}
		if !slices.Equal(a.Ports, wantPorts) {
			return container.InspectResponse{}, fmt.Errorf("scion %s %s: ports %+v, want %+v", action, ag.name, a.Ports, wantPorts)
		}
		c, err := state()
		if err != nil {
			return c, fmt.Errorf("after scion %s: %w", action, err)
		}
		if c.State.Running != running {
			return c, fmt.Errorf("after scion %s %s its container is %s, want running=%v", action, ag.name, c.State.Status, running)
		}
		return c, nil
	}
	if _, err := step("stop", api.PhaseStopped, false); err != nil {
		return err
	}
	started, err := step("start", api.PhaseRunning, true)
	if err != nil {
		return err
	}
	restarted, err := step("restart", api.PhaseRunning, true)
	if err != nil {
		return err
	}
	if restarted.State.StartedAt == started.State.StartedAt {
		return fmt.Errorf("scion restart %s: the container's StartedAt is still %s", ag.name, started.State.StartedAt)
	}
	return nil
}

// checkWorkspaces checks each sharing mode from inside the containers.
func checkWorkspaces(t *testing.T, h *host, dataDir, probe string, projectIDs map[string]string, agents []*dockerAgent) {
	t.Helper()
	for _, ag := range agents {
		home := filepath.Join(dataDir, "projects", ag.a.ProjectID, "agents", ag.a.ID, "home")
		if err := copyFile(probe, filepath.Join(home, "fsprobe"), 0o755); err != nil {
			t.Fatalf("install fsprobe for %s: %v", ag.name, err)
		}
	}
	run := func(ag *dockerAgent, args ...string) (string, error) {
		out, errOut, code, err := h.scionCode(nil, append([]string{"exec", ag.name, "--project", ag.project, "--", "/home/agent/fsprobe"}, args...)...)
		if err == nil && code != 0 {
			err = fmt.Errorf("fsprobe %s in %s: exit %d: %s", strings.Join(args, " "), ag.name, code, errOut)
		}
		return out, err
	}
	ls := func(ag *dockerAgent) ([]string, error) {
		out, err := run(ag, "ls", "/workspace")
		return strings.Fields(out), err
	}
	byProject := map[string][]*dockerAgent{}
	for _, ag := range agents {
		byProject[ag.project] = append(byProject[ag.project], ag)
	}

	// Every agent writes a file of its own into its /workspace; who sees
	// whose tells the sharing apart.
	forEach(t, agents, func(ag *dockerAgent) error {
		_, err := run(ag, "write", "/workspace/by-"+ag.name+".txt", "written by "+ag.name)
		return err
	})
	forEach(t, agents, func(ag *dockerAgent) error {
		names, err := ls(ag)
		if err != nil {
			return err
		}
		var want []string
		switch ag.mode {
		case api.SharingWorktreePerAgent, api.SharingClonePerAgent:
			want = []string{".git", "README.md", "src/", "by-" + ag.name + ".txt"}
			if ag.mode == api.SharingClonePerAgent {
				want[0] = ".git/"
			}
		case api.SharingEmptyPerAgent:
			want = []string{"by-" + ag.name + ".txt"}
		case api.SharingSharedWorkspace:
			want = []string{".git/", "README.md", "src/"}
			for _, o := range byProject[ag.project] {
				want = append(want, "by-"+o.name+".txt")
			}
		}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			return fmt.Errorf("%s (%s) sees /workspace = %v, want %v", ag.name, ag.mode, names, want)
		}
		return nil
	})

	// Git checkouts: a worktree is on the agent's own branch (read through
	// its .git file, which needs the base clone's git directory mounted at
	// its host path), a clone on the remote's default branch.
	forEach(t, agents, func(ag *dockerAgent) error {
		var want string
		switch ag.mode {
		case api.SharingWorktreePerAgent:
			want = "ref: refs/heads/scion/" + ag.name
		case api.SharingClonePerAgent, api.SharingSharedWorkspace:
			want = "ref: refs/heads/main"
		default:
			return nil
		}
		out, err := run(ag, "head", "/workspace")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != want {
			return fmt.Errorf("%s (%s): HEAD of /workspace is %q, want %q", ag.name, ag.mode, strings.TrimSpace(out), want)
		}
		return nil
	})

	// The broker's records and the host side agree.
	sharedDir := filepath.Join(dataDir, "projects", projectIDs["sh"], "shared")
	for _, ag := range agents {
		agentDir := filepath.Join(dataDir, "projects", ag.a.ProjectID, "agents", ag.a.ID)
		var rec struct {
			Mode, Path, Branch string
		}
		b, err := os.ReadFile(filepath.Join(agentDir, "workspace.json"))
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			t.Errorf("%s: workspace record: %v", ag.name, err)
			continue
		}
		wantPath := filepath.Join(agentDir, "workspace")
		if ag.mode == api.SharingSharedWorkspace {
			wantPath = sharedDir
		}
		if rec.Mode != ag.mode || rec.Path != wantPath {
			t.Errorf("%s: workspace record mode %q path %q, want %q %q", ag.name, rec.Mode, rec.Path, ag.mode, wantPath)
		}
		if ag.mode == api.SharingWorktreePerAgent && rec.Branch != "scion/"+ag.name {
			t.Errorf("%s: workspace record branch %q, want scion/%s", ag.name, rec.Branch, ag.name)
		}
		got, err := os.ReadFile(filepath.Join(wantPath, "by-"+ag.name+".txt"))
		if err != nil || string(got) != "written by "+ag.name {
			t.Errorf("%s: on the host, %s/by-%s.txt is %q (%v)", ag.name, wantPath, ag.name, got, err)
		}
	}
	// One agent reads what another wrote in the shared checkout.
	sh := byProject["sh"]
	if out, err := run(sh[1], "cat", "/workspace/by-"+sh[0].name+".txt"); err != nil || out != "written by "+sh[0].name {
		t.Errorf("%s reading %s's file in the shared workspace: %q (%v)", sh[1].name, sh[0].name, out, err)
	}
}
