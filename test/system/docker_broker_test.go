package system

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/docker"
)

// teamWithDockerBroker starts a team Hub, an admin host using it (project
// "default", Agent Defaults' image the demo image) and a broker process
// with the docker runtime and the given port range, providing for
// "default", and waits until it is online.
func teamWithDockerBroker(t *testing.T, portRange string) (admin *host, b *dockerBrokerHost) {
	t.Helper()
	cl := requireDocker(t)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin = newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	admin.mustScion(t, "hub", "settings", "set", "--default-image", docker.DemoImage)
	b = setupDockerBroker(t, cl, hub, token, "dock", portRange, "default")
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{"dock": api.BrokerOnline}) })
	return admin, b
}

// TestDockerBrokerKillReadopt: a broker process running three agents on
// Docker is killed with SIGKILL; its containers keep running. Restarted,
// the broker re-adopts them from the engine's inventory: the Hub shows
// them running, each agent still has exactly its one container, which was
// never restarted, and the broker's port pool is rebuilt from the
// containers (their ports stay theirs; a new agent gets only what is
// left).
func TestDockerBrokerKillReadopt(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	portRange, lo := smallPortRange(t, 4)
	admin, b := teamWithDockerBroker(t, portRange)

	names := []string{"r1", "r2", "r3"}
	forEach(t, names, func(n string) error {
		var a api.Agent
		if err := admin.scionJSONCmd(&a, "start", n, "--port", fmt.Sprint(agentPort), "--", "scion", "agent-demo", "--stay", "--steps", "0"); err != nil {
			return err
		}
		if a.Phase != api.PhaseRunning {
			return fmt.Errorf("%s: phase %s (%s)", n, a.Phase, a.StatusMessage)
		}
		return nil
	})
	m, err := admin.agentsBySlug()
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		agentID, containerID, startedAt string
		ports                           []api.PortMapping
	}
	before := map[string]seen{}
	held := map[int]bool{}
	for _, n := range names {
		a := m[n]
		cs := agentContainers(t, cl, a.ID)
		if len(cs) != 1 {
			t.Fatalf("%s has %d containers before the kill", n, len(cs))
		}
		if len(a.Ports) != 1 || a.Ports[0].HostPort < lo || a.Ports[0].HostPort > lo+3 || held[a.Ports[0].HostPort] {
			t.Fatalf("%s: ports %+v, want one host port of %s not held by another agent (%v)", n, a.Ports, portRange, held)
		}
		held[a.Ports[0].HostPort] = true
		c := inspect(t, cl, cs[0].ID)
		before[n] = seen{a.ID, c.ID, c.State.StartedAt, a.Ports}
	}
	assertRunningCount(t, admin, "dock", 3)

	b.proc.Kill9(t)
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{"dock": api.BrokerOffline}) })
	for _, n := range names {
		if c := inspect(t, cl, before[n].containerID); !c.State.Running {
			t.Fatalf("%s's container stopped when its broker was killed: %s", n, c.State.Status)
		}
	}

	b.startDocker(t)
	took := wait.Eventually(t, hubRestartBudget, pollInterval, func() error {
		if err := admin.brokerStatuses(map[string]string{"dock": api.BrokerOnline}); err != nil {
			return err
		}
		m, err := admin.agentsBySlug()
		if err != nil {
			return err
		}
		for _, n := range names {
			if a := m[n]; a.Phase != api.PhaseRunning || a.ContainerStatus != api.ContainerRunning {
				return fmt.Errorf("%s is %s/%s (%s)", n, a.Phase, a.ContainerStatus, a.StatusMessage)
			}
		}
		return nil
	})
	t.Logf("MEASURED: restarted docker broker online with its 3 agents shown running %v after its process started", took.Round(time.Millisecond))
	// Over a few heartbeats: still one container per agent, the same one,
	// never restarted, and the Hub keeps them running with their ports.
	wait.Consistently(t, 2*(hbInterval+hbGrace), pollInterval, func() error {
		m, err := admin.agentsBySlug()
		if err != nil {
			return err
		}
		for _, n := range names {
			if a := m[n]; a.Phase != api.PhaseRunning || !slices.Equal(a.Ports, before[n].ports) {
				return fmt.Errorf("%s after the broker's restart: phase %s, ports %+v; before the kill: ports %+v", n, a.Phase, a.Ports, before[n].ports)
			}
			cs := agentContainers(t, cl, before[n].agentID)
			if len(cs) != 1 {
				return fmt.Errorf("%s has %d containers after the broker's restart: %v", n, len(cs), containerNames(cs))
			}
			c := inspect(t, cl, cs[0].ID)
			if c.ID != before[n].containerID || c.State.StartedAt != before[n].startedAt || c.RestartCount != 0 || !c.State.Running {
				return fmt.Errorf("%s: container %s started at %s (restarts %d, running %v); before the kill it was %s started at %s",
					n, c.ID[:12], c.State.StartedAt, c.RestartCount, c.State.Running, before[n].containerID[:12], before[n].startedAt)
			}
		}
		return nil
	})
	assertRunningCount(t, admin, "dock", 3)

	// The re-adopted agents are driven as before.
	out, _, code, err := admin.scionCode(nil, "exec", "r2", "--", "scion", "agent-demo", "--steps", "0")
	if err != nil || code != 0 || !strings.Contains(out, "agent "+before["r2"].agentID) {
		t.Errorf("exec in a re-adopted agent: exit %d (%v), output %q", code, err, out)
	}
	// The rebuilt pool knows the adopted agents' ports: a new agent gets
	// the one port left, and the next finds the pool exhausted.
	var r4 api.Agent
	if err := admin.scionJSONCmd(&r4, "start", "r4", "--port", fmt.Sprint(agentPort), "--", "scion", "agent-demo", "--stay", "--steps", "0"); err != nil {
		t.Fatal(err)
	}
	if len(r4.Ports) != 1 || held[r4.Ports[0].HostPort] || r4.Ports[0].HostPort < lo || r4.Ports[0].HostPort > lo+3 {
		t.Errorf("a new agent after the restart got ports %+v; the adopted agents hold %v of %s", r4.Ports, held, portRange)
	}
	_, errOut, code, err := admin.scionCode(nil, "start", "r5", "--port", fmt.Sprint(agentPort), "--", "scion", "agent-demo", "--stay")
	if err != nil || code == 0 || !strings.Contains(errOut, "port_pool_exhausted") {
		t.Errorf("a fifth agent on a 4-port pool after the restart: exit %d (%v), stderr %q; want port_pool_exhausted", code, err, errOut)
	}

	forEach(t, []string{"r1", "r2", "r3", "r4", "r5"}, func(n string) error { _, _, err := admin.scion("delete", n); return err })
	if cs := brokerContainers(t, cl, b.brokerID); len(cs) != 0 {
		t.Errorf("after deleting the agents the engine still has %v", containerNames(cs))
	}
	if dirs := agentDirs(t, filepath.Join(b.home, "broker")); len(dirs) != 0 {
		t.Errorf("after deleting the agents these agent directories remain: %v", dirs)
	}
	assertRunningCount(t, admin, "dock", 0)
}

// TestDockerBadInput: an image the engine does not have, a command that
// cannot run or exits at once, a workspace path that escapes the broker's
// data directory, an exhausted port pool. Each ends in phase error with a
// message naming the cause, gives back its capacity slot and its ports and
// leaves nothing behind; a healthy agent on the same broker is untouched
// throughout. The broker is a separate process on a team Hub, with a pool
// of two host ports.
func TestDockerBadInput(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	portRange, lo := smallPortRange(t, 2)
	h, b := teamWithDockerBroker(t, portRange)
	dataDir := filepath.Join(b.home, "broker")
	h.mustScion(t, "start", "healthy", "--", "scion", "agent-demo", "--stay", "--steps", "0")
	assertRunningCount(t, h, "dock", 1)

	errorPhase := func(t *testing.T, name string, wants ...string) api.Agent {
		t.Helper()
		var got api.Agent
		wait.Eventually(t, 15*time.Second, pollInterval, func() error {
			m, err := h.agentsBySlug()
			if err != nil {
				return err
			}
			got = m[name]
			if got.Phase != api.PhaseError {
				return fmt.Errorf("%s is %s (%q), want error", name, got.Phase, got.StatusMessage)
			}
			return nil
		})
		for _, w := range wants {
			if !strings.Contains(strings.ToLower(got.StatusMessage), strings.ToLower(w)) {
				t.Errorf("%s's status message %q does not name %q", name, got.StatusMessage, w)
			}
		}
		if len(got.Ports) != 0 {
			t.Errorf("%s in phase error still shows ports %+v", name, got.Ports)
		}
		return got
	}
	nothingLeft := func(t *testing.T, a api.Agent) {
		t.Helper()
		if cs := agentContainers(t, cl, a.ID); len(cs) != 0 {
			t.Errorf("%s left containers: %v", a.Slug, containerNames(cs))
		}
		if dirs, _ := filepath.Glob(filepath.Join(dataDir, "projects", "*", "agents", a.ID)); len(dirs) != 0 {
			t.Errorf("%s left its agent directory: %v", a.Slug, dirs)
		}
	}
	startPorted := func(t *testing.T, name string) (api.Agent, string, int) {
		t.Helper()
		var a api.Agent
		args := []string{"start", name, "--port", fmt.Sprint(agentPort), "-o", "json", "--", "scion", "agent-demo", "--stay", "--steps", "0"}
		out, errOut, code, err := h.scionCode(nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &a); err != nil {
				t.Fatalf("scion %s: %v: %q", strings.Join(args, " "), err, out)
			}
		}
		return a, errOut, code
	}

	t.Run("image not on the engine", func(t *testing.T) {
		_, errOut, code, err := h.scionCode(nil, "start", "noimage", "--image", "scion-no-such-image:latest", "--", "scion", "agent-demo")
		if err != nil {
			t.Fatal(err)
		}
		if code == 0 || !strings.Contains(errOut, "scion-no-such-image:latest") || !strings.Contains(errOut, "not available") {
			t.Errorf("scion start --image scion-no-such-image:latest: exit %d, stderr %q; want a failure naming the image", code, errOut)
		}
		a := errorPhase(t, "noimage", "image scion-no-such-image:latest is not available")
		assertRunningCount(t, h, "dock", 1)
		nothingLeft(t, a)
	})

	t.Run("command that cannot run", func(t *testing.T) {
		// The engine's init starts and then fails to exec the command, so
		// the start may answer running before the exit is seen (the
		// runtime takes one look; Options.StartupWait is 0); either way
		// the agent must end in error with the exit code and the output.
		_, errOut, code, err := h.scionCode(nil, "start", "nocommand", "--", "/nonexistent")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("scion start nocommand -- /nonexistent: exit %d %s", code, strings.TrimSpace(errOut))
		a := errorPhase(t, "nocommand", "127", "exec /nonexistent failed: no such file or directory")
		assertRunningCount(t, h, "dock", 1)
		for _, c := range agentContainers(t, cl, a.ID) {
			if c.State == "running" {
				t.Errorf("nocommand's container %s is running", c.ID[:12])
			}
		}
		h.mustScion(t, "delete", "nocommand")
		nothingLeft(t, a)
	})

	t.Run("command that exits at once", func(t *testing.T) {
		// As above: the start answers running or fails, depending on
		// whether its one look sees the exit.
		if _, _, _, err := h.scionCode(nil, "start", "badflag", "--", "scion", "agent-demo", "--no-such-flag"); err != nil {
			t.Fatal(err)
		}
		a := errorPhase(t, "badflag", "code 2", "unknown flag: --no-such-flag")
		assertRunningCount(t, h, "dock", 1)
		h.mustScion(t, "delete", "badflag")
		nothingLeft(t, a)
	})

	t.Run("workspace path escaping the data directory", func(t *testing.T) {
		// The project's directory on the broker is a symlink to elsewhere
		// (an operator's mistake, or an attack on the data directory).
		var p api.Project
		h.mustScionJSON(t, &p, "project", "create", "escape", "--sharing-mode", api.SharingEmptyPerAgent)
		b.mustScion(t, "runtime-broker", "provide", "--project", "escape")
		outside := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dataDir, "projects"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dataDir, "projects", p.ID)); err != nil {
			t.Fatal(err)
		}
		_, errOut, code, err := h.scionCode(nil, "start", "escaper", "--project", "escape", "--", "scion", "agent-demo")
		if err != nil {
			t.Fatal(err)
		}
		if code == 0 || !strings.Contains(errOut, "outside the runtime broker's data directory") {
			t.Errorf("scion start escaper: exit %d, stderr %q; want a failure saying the path leaves the data directory", code, errOut)
		}
		a := errorPhase(t, "escaper", "outside the runtime broker's data directory")
		assertRunningCount(t, h, "dock", 1)
		nothingLeft(t, a)
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("the broker wrote into the directory outside its data directory: %v", entries)
		}
		h.mustScion(t, "delete", "escaper", "--project", "escape")
	})

	t.Run("port pool exhausted", func(t *testing.T) {
		// Two agents take the two host ports.
		got := map[int]string{}
		for _, n := range []string{"p1", "p2"} {
			a, errOut, code := startPorted(t, n)
			if code != 0 || a.Phase != api.PhaseRunning || len(a.Ports) != 1 || a.Ports[0].ContainerPort != agentPort {
				t.Fatalf("scion start %s --port %d: exit %d, %+v, stderr %q", n, agentPort, code, a, errOut)
			}
			got[a.Ports[0].HostPort] = n
		}
		if got[lo] == "" || got[lo+1] == "" {
			t.Fatalf("the two agents got host ports %v, want %d and %d (the pool %s)", got, lo, lo+1, portRange)
		}
		assertRunningCount(t, h, "dock", 3)

		// A third finds the pool exhausted: 503, phase error, no slot, no
		// container, no directory.
		_, errOut, code := startPorted(t, "p3")
		if code == 0 || !strings.Contains(errOut, "port_pool_exhausted") || !strings.Contains(errOut, portRange) {
			t.Errorf("scion start p3 on a used-up pool: exit %d, stderr %q; want port_pool_exhausted naming %s", code, errOut, portRange)
		}
		p3 := errorPhase(t, "p3", "port pool exhausted", portRange)
		assertRunningCount(t, h, "dock", 3)
		nothingLeft(t, p3)

		// A stop gives p1's port back; p4 takes it; p1 cannot start again
		// while p4 holds it, and is told who does.
		var p1 api.Agent
		h.mustScionJSON(t, &p1, "stop", "p1")
		if p1.Phase != api.PhaseStopped || len(p1.Ports) != 0 {
			t.Errorf("after stop p1: phase %s ports %+v; want stopped without ports", p1.Phase, p1.Ports)
		}
		assertRunningCount(t, h, "dock", 2)
		p4, errOut, code := startPorted(t, "p4")
		if code != 0 || len(p4.Ports) != 1 || got[p4.Ports[0].HostPort] != "p1" {
			t.Fatalf("scion start p4 after p1 stopped: exit %d, ports %+v, stderr %q; want p1's old port", code, p4.Ports, errOut)
		}
		_, errOut, code, err := h.scionCode(nil, "start", "p1")
		if err != nil {
			t.Fatal(err)
		}
		if code == 0 || !strings.Contains(errOut, fmt.Sprint(p4.Ports[0].HostPort)) || !strings.Contains(errOut, "p4") {
			t.Errorf("scion start p1 while p4 holds its port: exit %d, stderr %q; want a refusal naming the port and p4", code, errOut)
		}
		assertRunningCount(t, h, "dock", 3)
		h.mustScion(t, "delete", "p4")
		h.mustScionJSON(t, &p1, "start", "p1")
		if p1.Phase != api.PhaseRunning || len(p1.Ports) != 1 || got[p1.Ports[0].HostPort] != "p1" {
			t.Errorf("scion start p1 once its port is free: phase %s (%s), ports %+v; want running on its own port again", p1.Phase, p1.StatusMessage, p1.Ports)
		}

		// Deleting gives every port back: two new agents get both.
		for _, n := range []string{"p1", "p2", "p3"} {
			h.mustScion(t, "delete", n)
		}
		assertRunningCount(t, h, "dock", 1)
		for _, n := range []string{"p5", "p6"} {
			a, errOut, code := startPorted(t, n)
			if code != 0 || len(a.Ports) != 1 {
				t.Errorf("scion start %s after every ported agent was deleted: exit %d, ports %+v, stderr %q: a port was not released", n, code, a.Ports, errOut)
			}
		}
		for _, n := range []string{"p5", "p6"} {
			if _, _, err := h.scion("delete", n); err != nil {
				t.Error(err)
			}
		}
	})

	// The healthy agent saw none of it.
	m, err := h.agentsBySlug()
	if err != nil {
		t.Fatal(err)
	}
	if a := m["healthy"]; a.Phase != api.PhaseRunning {
		t.Errorf("the healthy agent is %s (%s)", a.Phase, a.StatusMessage)
	}
	for _, a := range m { // and whatever a failed subtest left
		if _, _, err := h.scion("delete", a.ID); err != nil {
			t.Error(err)
		}
	}
	if cs := brokerContainers(t, cl, b.brokerID); len(cs) != 0 {
		t.Errorf("after deleting every agent the engine still has %v", containerNames(cs))
	}
	if dirs := agentDirs(t, dataDir); len(dirs) != 0 {
		t.Errorf("after deleting every agent these agent directories remain: %v", dirs)
	}
	assertRunningCount(t, h, "dock", 0)
}

// TestDockerPublishedPortAnswers: `scion start web --port C` on a
// workstation publishes container port C on the host port Agent.Ports
// names, and a server the agent runs on C answers there. The agent runs a
// Hub (`scion server start --enable-hub`, the one server the demo image
// has) listening on C.
func TestDockerPublishedPortAnswers(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	h := newHost(t, "web")
	ws := startDockerWorkstation(t, h, cl)
	// A container port that is free on the host too, so that the check
	// below can tell where the server really listens.
	cport := FreePort(t)
	var web api.Agent
	if err := h.scionJSONCmd(&web, "start", "web", "--port", fmt.Sprint(cport), "--env", "SCION_HOME=/tmp/scion-home",
		"--", "scion", "server", "start", "--enable-hub", "--listen", fmt.Sprintf("0.0.0.0:%d", cport), "--db", "/tmp/hub.db"); err != nil {
		t.Fatal(err)
	}
	if web.Phase != api.PhaseRunning || len(web.Ports) != 1 || web.Ports[0].ContainerPort != cport {
		t.Fatalf("scion start web --port %d: phase %s, ports %+v", cport, web.Phase, web.Ports)
	}
	hostPort := web.Ports[0].HostPort
	hc := &http.Client{Timeout: time.Second}
	get := func(port int) error {
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		return nil
	}
	// The server is up once it answers somewhere: on the published port,
	// or (with the host's network) on the container port itself.
	var onHost, onContainerPort error
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		onHost, onContainerPort = get(hostPort), get(cport)
		if onHost != nil && onContainerPort != nil {
			return fmt.Errorf("the agent's server answers neither on %d (%v) nor on %d (%v)", hostPort, onHost, cport, onContainerPort)
		}
		return nil
	})
	if onHost != nil {
		cs := agentContainers(t, cl, web.ID)
		network := "?"
		if len(cs) == 1 {
			network = string(inspect(t, cl, cs[0].ID).HostConfig.NetworkMode)
		}
		t.Errorf("BUG (launch/runtime_select.go agentNetwork with the port pool): Agent.Ports says container port %d is published on host port %d, but nothing answers there (%v); "+
			"the agent's server answers on the host's port %d instead (err %v). The container's network is %q: a broker next to a loopback Hub (the workstation, "+
			"or any broker whose hub_endpoint is 127.0.0.1/localhost) runs agents on the host network, where the engine discards port bindings, "+
			"so every published port the Hub shows is false and two agents asking for the same container port collide on the host",
			cport, hostPort, onHost, cport, onContainerPort, network)
	}
	h.mustScion(t, "delete", "web")
	if cs := brokerContainers(t, cl, ws.brokerID); len(cs) != 0 {
		t.Errorf("after deleting web the engine still has %v", containerNames(cs))
	}
}
