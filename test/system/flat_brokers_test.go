package system

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dockerclient "github.com/docker/docker/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// TestFlatBrokerInstances is issue 15's acceptance for flat Runtime
// Brokers, end to end: a team Hub (SQLite) with hub.flat_runtime_brokers
// turned on by its admin, and ONE broker process whose
// server.broker.instances are a Docker instance (the real engine, capped
// at one agent) and a Kubernetes instance (the kube-apiserver fixture),
// each registered with `runtime-broker register --instance`.
//
//   - Agents land pinned on each (the Docker one full takes nothing from
//     the Kubernetes one; a profile is refused), survive a restart of the
//     broker process on the same broker IDs and targets, and stop and
//     start there again.
//   - An operator edits the Hub's database (the agents' broker_id and
//     pinned_runtime_target, a broker's runtime_target): every operation of the spec's list that the
//     CLI has is refused with the 409 the spec names for the edit, while
//     get and list still answer, the row is unchanged and the container
//     and the pod are exactly as they were (nothing reached a broker).
//   - The Kubernetes instance restarted with another namespace in its
//     entry is refused (the Docker one serves) until the entry is put
//     back.
//   - A stop queued while the broker was offline and refused at the
//     reconnect leaves the agent stopped, stop_queued, with its slot;
//     a project delete is refused without force, and with force leaves
//     the misplaced agent's container running and logs it.
func TestFlatBrokerInstances(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel() // before the fixture (see requireKube)
	c := requireKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.Namespace(t)
	user := kube.StaticUsers[0]
	prepareAgentNamespace(t, ctx, c.Client, ns, user.Name)
	kubeconfig := c.Kubeconfig(t, "default", map[string]string{"batch": user.Token})

	hubHost := newHost(t, "hub")
	hub := startTeamHub(t, hubHost, hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	enableFlatBrokers(t, admin, hub.URL, token)

	// The broker host: both instances in settings.yaml, each registered
	// (its own credentials) and providing for the project.
	bh := newHost(t, "flat")
	bh.useHub(t, hub.URL, token)
	// The Docker instance's cap is 1 (maxAgents, applied at register); the
	// Kubernetes one inherits the Hub's default.
	docker := dockerInstance("flat-docker")
	one := 1
	docker.MaxAgents = &one
	writeInstances(t, bh, kubeconfig, docker, kubeInstance("flat-k8s", "batch", ns))
	var dockerID string
	cleanupBrokerContainers(t, cl, &dockerID)
	dockerID = registerInstance(t, bh, "flat-docker", "default")
	kubeID := registerInstance(t, bh, "flat-k8s", "default")
	if dockerID == kubeID {
		t.Fatalf("both instances registered as broker %s", dockerID)
	}
	dockerTarget := api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	kubeTarget := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: ns}
	wantTargets := map[string]api.RuntimeTarget{"flat-docker": dockerTarget, "flat-k8s": kubeTarget}

	startArgs := append([]string{"runtime-broker", "start"}, hbFlags...)
	proc := bh.start(t, "broker-flat", startArgs...)
	brokers := instancesOnline(t, admin, wantTargets)
	assertInstanceIDs(t, brokers, dockerID, kubeID)
	if b := brokers["flat-docker"]; b.Settings.MaxAgents == nil || *b.Settings.MaxAgents != 1 || brokers["flat-k8s"].Settings.MaxAgents != nil {
		t.Errorf("the instances' limits at the Hub: flat-docker %+v, flat-k8s %+v; want 1 and inherited", b.Settings, brokers["flat-k8s"].Settings)
	}

	// Agents land pinned on each instance, and really exist there.
	var fd, fk api.Agent
	if err := admin.scionJSONCmd(&fd, "start", "fd", "--broker", "flat-docker", "--", "scion", "agent-demo", "--stay", "--steps", "0"); err != nil {
		t.Fatal(err)
	}
	assertPinned(t, fd, dockerID, dockerTarget)
	// The Docker instance is full; that takes nothing from the Kubernetes
	// instance, and the refusal writes nothing.
	_, stderr, rc, err := admin.scionCode(nil, "start", "fd2", "--broker", "flat-docker", "--", "scion", "agent-demo", "--stay", "--steps", "0")
	if err != nil {
		t.Fatal(err)
	}
	if rc == 0 || !strings.Contains(stderr, "error: "+api.CodeQuotaExceeded+":") {
		t.Errorf("start fd2 on the full Docker instance: exit %d, stderr %q; want %s", rc, stderr, api.CodeQuotaExceeded)
	}
	// No profiles on a flat instance, not even one the request names.
	_, stderr, rc, err = admin.scionCode(nil, "start", "fp", "--broker", "flat-k8s", "-p", "batch", "--image", "scion/test-agent:latest", "--", "/agent", "serve")
	if err != nil {
		t.Fatal(err)
	}
	if rc == 0 || !strings.Contains(stderr, "flat instance") {
		t.Errorf("start fp -p batch on the Kubernetes instance: exit %d, stderr %q; want refused, saying it is a flat instance", rc, stderr)
	}
	if m, err := admin.agentsBySlug(); err != nil || len(m) != 1 {
		t.Errorf("agents after the refused creates: %v, %v; want fd only", m, err)
	}
	if err := admin.scionJSONCmd(&fk, "start", "fk", "--broker", "flat-k8s", "--image", "scion/test-agent:latest", "--", "/agent", "serve"); err != nil {
		t.Fatal(err)
	}
	assertPinned(t, fk, kubeID, kubeTarget)
	containerID := runningContainer(t, cl, fd.ID, dockerID)
	pods := agentPods(ctx, c, ns, fk.ID, kubeID)
	if err := pods.one(); err != nil {
		t.Fatal(err)
	}

	table := admin.mustScion(t, "hub", "brokers")
	for _, w := range []string{dockerTarget.String(), kubeTarget.String()} {
		if !strings.Contains(table, w) {
			t.Errorf("scion hub brokers lacks the target %s:\n%s", w, table)
		}
	}
	assertInstanceStatus(t, bh, map[string]instanceStatusRow{
		"flat-docker": {Key: "flat-docker", Name: "flat-docker", BrokerID: dockerID, RuntimeTarget: dockerTarget, State: api.BrokerOnline},
		"flat-k8s":    {Key: "flat-k8s", Name: "flat-k8s", BrokerID: kubeID, RuntimeTarget: kubeTarget, State: api.BrokerOnline},
	})

	// Restart the broker process: the same IDs come back online on the
	// same targets, and the agents are still there.
	proc.Signal(t, syscall.SIGTERM)
	proc.WaitExit(t, 20*time.Second)
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"flat-docker": api.BrokerOffline, "flat-k8s": api.BrokerOffline})
	})
	proc = bh.start(t, "broker-flat", startArgs...)
	assertInstanceIDs(t, instancesOnline(t, admin, wantTargets), dockerID, kubeID)
	as, err := admin.agentsBySlug()
	if err != nil {
		t.Fatal(err)
	}
	assertPinned(t, as["fd"], dockerID, dockerTarget)
	assertPinned(t, as["fk"], kubeID, kubeTarget)
	if got := runningContainer(t, cl, fd.ID, dockerID); got != containerID {
		t.Errorf("after the broker restart fd runs in container %s, want %s", got, containerID)
	}
	if err := pods.one(); err != nil {
		t.Fatalf("after the broker restart: %v", err)
	}

	// A stop and a start work on the same target.
	admin.mustScion(t, "stop", "fd")
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		for _, c := range agentContainers(t, cl, fd.ID) {
			if c.State == "running" {
				return fmt.Errorf("fd's container %s still running after stop", c.ID[:12])
			}
		}
		return nil
	})
	var again api.Agent
	admin.mustScionJSON(t, &again, "start", "fd")
	assertPinned(t, again, dockerID, dockerTarget)
	runningContainer(t, cl, fd.ID, dockerID)
	admin.mustScion(t, "stop", "fk")
	wait.Eventually(t, 30*time.Second, pollInterval, pods.none)
	admin.mustScionJSON(t, &again, "start", "fk")
	assertPinned(t, again, kubeID, kubeTarget)
	wait.Eventually(t, 30*time.Second, pollInterval, pods.one)

	// The forged record changes.
	db := hubDB{path: filepath.Join(hubHost.home, "hub.db")}
	fd, fk = admin.agentNamed(t, "fd"), admin.agentNamed(t, "fk")
	dockerState := func() string { return containerState(t, cl, fd.ID) }
	podState := func() string { return pods.state(t) }
	const unregistered = "0190c3a2-0000-7000-8000-00000000dead"
	elsewhere := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "elsewhere"}
	for _, fc := range []struct {
		name     string
		agent    api.Agent
		brokerID string // the forged broker_id ("": the agent's own)
		pin      string // the forged pinned_runtime_target ("": the agent's own)
		// brokerTarget, when set, is the runtime_target forged on the
		// agent's broker's row ("null": none).
		brokerTarget string
		code         string
		state        func() string // what must not change on the runtime
	}{
		{name: "assigned to the other instance", agent: fd, brokerID: kubeID, code: api.CodeTargetPinStale, state: dockerState},
		{name: "incomplete pin", agent: fk, pin: `{"runtimeBrokerId":"` + kubeID + `","type":"kubernetes"}`, code: api.CodeTargetPinStale, state: podState},
		{name: "pinned target not served", agent: fk, pin: pinJSON(t, kubeID, elsewhere), code: api.CodeTargetMismatch, state: podState},
		{name: "broker serves another target", agent: fk, brokerTarget: targetJSON(t, elsewhere), code: api.CodeTargetMismatch, state: podState},
		{name: "broker serves no single target", agent: fd, brokerTarget: "null", code: api.CodeTargetMismatch, state: dockerState},
		{name: "pinned broker not registered", agent: fd, brokerID: unregistered, pin: pinJSON(t, unregistered, dockerTarget), code: api.CodeBrokerMissing, state: dockerState},
	} {
		t.Run(fc.name, func(t *testing.T) {
			orig := db.agent(t, fc.agent.ID)
			before := fc.state()
			db.setPlacement(t, fc.agent.ID, cmp.Or(fc.brokerID, orig.BrokerID), cmp.Or(fc.pin, orig.Pin))
			defer db.setPlacement(t, fc.agent.ID, orig.BrokerID, orig.Pin)
			if fc.brokerTarget != "" {
				was := db.brokerTarget(t, orig.BrokerID)
				db.setBrokerTarget(t, orig.BrokerID, fc.brokerTarget)
				defer db.setBrokerTarget(t, orig.BrokerID, was)
			}
			forged := db.agent(t, fc.agent.ID)

			assertRefused(t, admin, fc.agent.Slug, fc.code)
			assertReadable(t, admin, hub.URL, token, fc.agent, forged.BrokerID)
			if after := db.agent(t, fc.agent.ID); after != forged {
				t.Errorf("the refused operations changed agent %s's row: %+v, was %+v", fc.agent.Slug, after, forged)
			}
			// Nothing reached a broker: a refused stop, delete or restart
			// would have changed what runs.
			if after := fc.state(); after != before {
				t.Errorf("agent %s's workload changed while every operation was refused: %s, was %s", fc.agent.Slug, after, before)
			}
		})
	}

	// The placement restored, the agent is reachable again.
	if out, _, err := admin.scion("logs", "fd"); err != nil || out == "" {
		t.Errorf("logs fd with its placement restored: %q, %v", out, err)
	}

	// Not forged this time: the operator edits the Kubernetes instance's
	// namespace and restarts the broker. The instance registered serving
	// another target, so it is refused and reported while the Docker one
	// serves, and fk's pod is untouched; put back, it serves again and fk
	// stops and starts there.
	ns2 := c.Namespace(t)
	prepareAgentNamespace(t, ctx, c.Client, ns2, user.Name)
	restartWith := func(k8s config.Instance) {
		t.Helper()
		proc.Signal(t, syscall.SIGTERM)
		proc.WaitExit(t, 20*time.Second)
		wait.Eventually(t, offlineBudget, pollInterval, func() error {
			return admin.brokerStatuses(map[string]string{"flat-docker": api.BrokerOffline, "flat-k8s": api.BrokerOffline})
		})
		writeInstances(t, bh, kubeconfig, docker, k8s)
		proc = bh.start(t, "broker-flat", startArgs...)
	}
	before := podState()
	restartWith(kubeInstance("flat-k8s", "batch", ns2))
	instancesOnline(t, admin, map[string]api.RuntimeTarget{"flat-docker": dockerTarget})
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		if !hubLogNames(proc, "instance flat-k8s refused", kubeTarget.String(), "kubernetes:batch/"+ns2) {
			return fmt.Errorf("no 'instance flat-k8s refused' naming %s and %s in the broker's log yet", kubeTarget.String(), ns2)
		}
		return nil
	})
	if m, err := admin.brokers(); err != nil || m["flat-k8s"].Status == api.BrokerOnline || m["flat-k8s"].RuntimeTarget == nil || *m["flat-k8s"].RuntimeTarget != kubeTarget {
		t.Errorf("flat-k8s at the Hub while its entry names another namespace: %+v, %v; want offline, still recorded serving %s", m["flat-k8s"], err, kubeTarget.String())
	}
	if after := podState(); after != before {
		t.Errorf("fk's pod changed while its instance was refused: %s, was %s", after, before)
	}
	restartWith(kubeInstance("flat-k8s", "batch", ns))
	instancesOnline(t, admin, wantTargets)
	admin.mustScion(t, "stop", "fk")
	wait.Eventually(t, 30*time.Second, pollInterval, pods.none)
	admin.mustScionJSON(t, &again, "start", "fk")
	assertPinned(t, again, kubeID, kubeTarget)
	wait.Eventually(t, 30*time.Second, pollInterval, pods.one)

	// A stop queued while the broker is offline, the record forged before
	// it reconnects: the queued stop is refused at the reconnect, nothing
	// is sent, and the agent is left stopped (stop_queued) with its slot.
	proc.Signal(t, syscall.SIGTERM)
	proc.WaitExit(t, 20*time.Second)
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"flat-docker": api.BrokerOffline, "flat-k8s": api.BrokerOffline})
	})
	var queued api.Agent
	admin.mustScionJSON(t, &queued, "stop", "fd")
	if queued.QueuedDispatch == nil {
		t.Fatalf("stop fd with its broker offline: %+v; want a queued dispatch", queued)
	}
	before = dockerState()
	orig := db.agent(t, fd.ID)
	db.setPlacement(t, fd.ID, kubeID, orig.Pin)
	proc = bh.start(t, "broker-flat", startArgs...)
	instancesOnline(t, admin, wantTargets)
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		a := admin.agentNamed(t, "fd")
		if a.QueuedDispatch != nil || a.Phase != api.PhaseStopped || a.ContainerStatus != api.ContainerStopQueued {
			return fmt.Errorf("fd after the reconnect: phase %s, container status %s, queued %+v; want stopped, %s, nothing queued",
				a.Phase, a.ContainerStatus, a.QueuedDispatch, api.ContainerStopQueued)
		}
		return nil
	})
	if after := dockerState(); after != before {
		t.Errorf("fd's container changed though its queued stop was refused: %s, was %s", after, before)
	}
	if got := db.reservation(t, fd.ID); got != dockerID {
		t.Errorf("fd's capacity slot is on broker %q, want still %s (its pinned broker)", got, dockerID)
	}
	// The Hub did not wait for the reconnect to tell the user either.
	assertRefused(t, admin, "fd", api.CodeTargetPinStale)

	// A project delete: refused without force while the misplaced agent
	// remains (the message says force exists); with force the records go,
	// nothing is sent for fd (its container keeps running, the Hub logs
	// an error naming it and its pinned broker) and fk's pod is deleted.
	_, stderr, rc, err = admin.scionCode(nil, "project", "delete", "default")
	if err != nil {
		t.Fatal(err)
	}
	if rc == 0 || !strings.Contains(stderr, "--force") {
		t.Errorf("project delete without force: exit %d, stderr %q; want refused, mentioning --force", rc, stderr)
	}
	admin.mustScion(t, "project", "delete", "default", "--force")
	if m, err := admin.agentsBySlug(); err != nil || len(m) != 0 {
		t.Errorf("agents after project delete --force: %v, %v", m, err)
	}
	wait.Eventually(t, 30*time.Second, pollInterval, pods.none)
	if after := dockerState(); after != before {
		t.Errorf("fd's container changed though its placement was inconsistent at the project delete: %s, was %s", after, before)
	}
	if !hubLogNames(hub.proc, "placement is inconsistent", "fd", dockerID) {
		t.Errorf("the Hub's log has no error naming fd and its pinned broker %s:\n%s", dockerID, hub.proc.Logs())
	}
}

// hubLogNames reports whether one line of p's log holds every word.
func hubLogNames(p *Proc, words ...string) bool {
	for _, line := range strings.Split(p.Logs(), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// assertInstanceIDs checks the Hub lists the instances under the IDs
// their registrations got.
func assertInstanceIDs(t *testing.T, m map[string]api.RuntimeBroker, dockerID, kubeID string) {
	t.Helper()
	if m["flat-docker"].ID != dockerID || m["flat-k8s"].ID != kubeID {
		t.Fatalf("the Hub lists the instances as %v; registered as flat-docker=%s flat-k8s=%s", statusSummary(m), dockerID, kubeID)
	}
}

// assertPinned checks a's pinnedRuntimeTarget names brokerID and target,
// and that a runs there: running, or on Kubernetes (no kubelet here,
// its pod stays pending) provisioning with its pod pending.
func assertPinned(t *testing.T, a api.Agent, brokerID string, target api.RuntimeTarget) {
	t.Helper()
	want := api.PinnedRuntimeTarget{BrokerID: brokerID, RuntimeTarget: target}
	if a.PinnedRuntimeTarget == nil || *a.PinnedRuntimeTarget != want {
		t.Fatalf("agent %s: pinnedRuntimeTarget %+v, want %+v", a.Slug, a.PinnedRuntimeTarget, want)
	}
	phase, container := api.PhaseRunning, api.ContainerRunning
	if target.Type == api.RuntimeTargetKubernetes {
		phase, container = api.PhaseProvisioning, api.ContainerPending
	}
	if a.BrokerID != brokerID || a.Phase != phase || a.ContainerStatus != container {
		t.Fatalf("agent %s: %s/%s on broker %s (%s), want %s/%s on %s", a.Slug, a.Phase, a.ContainerStatus, a.BrokerID, a.StatusMessage, phase, container, brokerID)
	}
}

// runningContainer waits for agent's one container on the engine to run,
// labelled with brokerID, and returns its ID.
func runningContainer(t *testing.T, cl *dockerclient.Client, agentID, brokerID string) string {
	t.Helper()
	var id string
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		cs := agentContainers(t, cl, agentID)
		if len(cs) != 1 || cs[0].State != "running" || cs[0].Labels[runtime.LabelBrokerID] != brokerID {
			return fmt.Errorf("containers of agent %s: %v; want one running, of broker %s", agentID, containerNames(cs), brokerID)
		}
		id = cs[0].ID
		return nil
	})
	return id
}

// containerState is what a refused operation must leave as it was: the
// agent's containers, whether each runs, and since when.
func containerState(t *testing.T, cl *dockerclient.Client, agentID string) string {
	t.Helper()
	var parts []string
	for _, c := range agentContainers(t, cl, agentID) {
		ci := inspect(t, cl, c.ID)
		parts = append(parts, fmt.Sprintf("%s running=%v started=%s", c.ID[:12], ci.State.Running, ci.State.StartedAt))
	}
	return strings.Join(parts, "; ")
}

// podsOf finds an agent's pods in the fixture's namespace.
type podsOf struct {
	ctx context.Context
	c   *kube.Cluster
	ns  string
	sel string
}

func agentPods(ctx context.Context, c *kube.Cluster, ns, agentID, brokerID string) podsOf {
	return podsOf{ctx: ctx, c: c, ns: ns, sel: runtime.LabelAgentID + "=" + agentID + "," + runtime.LabelBrokerID + "=" + brokerID}
}

func (p podsOf) list() ([]string, error) {
	l, err := p.c.Client.CoreV1().Pods(p.ns).List(p.ctx, metav1.ListOptions{LabelSelector: p.sel})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pod := range l.Items {
		// A pod being deleted is going: a refused delete must not start that.
		out = append(out, fmt.Sprintf("%s uid=%s rv=%s deleting=%v", pod.Name, pod.UID, pod.ResourceVersion, pod.DeletionTimestamp != nil))
	}
	return out, nil
}

// one: exactly one pod of the agent, not being deleted.
func (p podsOf) one() error {
	l, err := p.list()
	if err != nil {
		return err
	}
	if len(l) != 1 || strings.Contains(l[0], "deleting=true") {
		return fmt.Errorf("pods %s in %s: %v; want one", p.sel, p.ns, l)
	}
	return nil
}

// none: no pod of the agent left.
func (p podsOf) none() error {
	l, err := p.list()
	if err != nil {
		return err
	}
	if len(l) != 0 {
		return fmt.Errorf("pods %s in %s: %v; want none", p.sel, p.ns, l)
	}
	return nil
}

func (p podsOf) state(t *testing.T) string {
	t.Helper()
	l, err := p.list()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(l, "; ")
}

// agentNamed is `scion list`'s record of the agent name.
func (h *host) agentNamed(t *testing.T, name string) api.Agent {
	t.Helper()
	m, err := h.agentsBySlug()
	if err != nil {
		t.Fatal(err)
	}
	a, ok := m[name]
	if !ok {
		t.Fatalf("scion list has no agent %s", name)
	}
	return a
}

// assertInstanceStatus checks `runtime-broker status -o json` lists
// exactly want's instances with their IDs, targets and states, and that
// the table shows each target.
func assertInstanceStatus(t *testing.T, h *host, want map[string]instanceStatusRow) {
	t.Helper()
	var st struct {
		Instances []instanceStatusRow `json:"instances"`
	}
	h.mustScionJSON(t, &st, "runtime-broker", "status")
	if len(st.Instances) != len(want) {
		t.Errorf("runtime-broker status lists %+v, want %d instances", st.Instances, len(want))
	}
	for _, got := range st.Instances {
		if w, ok := want[got.Key]; !ok || got != w {
			t.Errorf("runtime-broker status: instance %+v, want %+v", got, w)
		}
	}
	table := h.mustScion(t, "runtime-broker", "status")
	for _, w := range want {
		if !strings.Contains(table, w.RuntimeTarget.String()) || !strings.Contains(table, w.BrokerID) {
			t.Errorf("runtime-broker status lacks %s's ID %s or target %s:\n%s", w.Key, w.BrokerID, w.RuntimeTarget.String(), table)
		}
	}
}
