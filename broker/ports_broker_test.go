package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

func withPorts(id string, start bool, ports ...int) wire.AgentSpec {
	s := spec(id)
	s.Start, s.Ports = start, ports
	return s
}

func mappedHosts(t *testing.T, st wire.AgentStatus, want int) []int {
	t.Helper()
	if len(st.Ports) != want {
		t.Fatalf("%s reports ports %v, want %d", st.AgentID, st.Ports, want)
	}
	return hostPorts(st.Ports)
}

// TestBrokerPortLifecycle: a create publishes pool ports (label and
// status), a stop gives them back to another agent, a start that finds
// one taken fails naming it, and delete returns them.
func TestBrokerPortLifecycle(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, func(c *Config) { c.PortRange = [2]int{32000, 32002} })
	waitConnected(t, b)

	st := hub.status(wire.MethodAgentCreate, withPorts("a1", true, 8080, 9090))
	a1 := mappedHosts(t, st, 2)
	for i, m := range st.Ports {
		if m.ContainerPort != []int{8080, 9090}[i] || m.HostPort < 32000 || m.HostPort > 32002 || m.Protocol != "tcp" {
			t.Fatalf("mapping %d = %+v", i, m)
		}
	}
	if c, err := rt.Inspect(t.Context(), "a1"); err != nil || c.Labels[labelPorts] != formatPorts(st.Ports) {
		t.Fatalf("container label %q (%v), want %q", c.Labels[labelPorts], err, formatPorts(st.Ports))
	}

	// Two ports asked, one free: refused before anything is made.
	err := hub.call(wire.MethodAgentCreate, withPorts("a2", true, 80, 81), nil)
	wantCode(t, err, api.CodePortPoolExhausted)
	if !strings.Contains(err.Error(), "port pool exhausted") {
		t.Errorf("error does not name the cause: %v", err)
	}
	if _, err := rt.Inspect(t.Context(), "a2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("exhausted create left a container (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(b.cfg.DataDir, "projects", "p1", "agents", "a2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("exhausted create left a directory (%v)", err)
	}
	if b.freePorts() != 1 {
		t.Fatalf("free ports = %d, want 1", b.freePorts())
	}

	// Suspend keeps the ports; stop gives them back.
	if st := hub.status(wire.MethodAgentSuspend, wire.AgentRef{AgentID: "a1"}); len(st.Ports) != 2 {
		t.Fatalf("suspended agent reports %v", st.Ports)
	}
	hub.status(wire.MethodAgentResume, wire.AgentRef{AgentID: "a1"})
	if st := hub.status(wire.MethodAgentStop, wire.AgentRef{AgentID: "a1", GraceMS: 10}); st.Ports != nil {
		t.Fatalf("stopped agent reports ports %v", st.Ports)
	}
	if b.freePorts() != 3 {
		t.Fatalf("free ports after stop = %d, want 3", b.freePorts())
	}
	a3 := mappedHosts(t, hub.status(wire.MethodAgentCreate, withPorts("a3", true, 80, 81, 82)), 3)

	// a1 wants its original ports back; a3 has them.
	err = hub.call(wire.MethodAgentStart, wire.AgentRef{AgentID: "a1"}, nil)
	wantCode(t, err, api.CodeConflict)
	if !strings.Contains(err.Error(), "slug-a3") || !strings.Contains(err.Error(), "host port 3200") {
		t.Errorf("conflict does not name the port and the agent: %v", err)
	}
	if c, _ := rt.Inspect(t.Context(), "a1"); c.State != runtime.StateExited {
		t.Fatalf("a1 after refused start: %s", c.State)
	}
	if got := b.heldPorts("a3"); !slices.Equal(got, slices.Sorted(slices.Values(a3))) {
		t.Fatalf("refused start changed a3's ports: %v, want %v", got, a3)
	}

	// Deleting a3 frees them; a1 starts on its original ports.
	hub.status(wire.MethodAgentDelete, wire.AgentRef{AgentID: "a3"})
	if st := hub.status(wire.MethodAgentStart, wire.AgentRef{AgentID: "a1"}); !slices.Equal(hostPorts(st.Ports), a1) {
		t.Fatalf("restarted a1 on %v, want its original %v", st.Ports, a1)
	}
	hub.status(wire.MethodAgentRestart, wire.AgentRef{AgentID: "a1", GraceMS: 10})
	if got := b.heldPorts("a1"); !slices.Equal(got, slices.Sorted(slices.Values(a1))) {
		t.Fatalf("after restart a1 holds %v, want %v", got, a1)
	}
	hub.status(wire.MethodAgentDelete, wire.AgentRef{AgentID: "a1"})
	if b.freePorts() != 3 {
		t.Fatalf("free ports after deleting everything = %d, want 3", b.freePorts())
	}
}

// TestBrokerPortsOnExit: an agent that exits by itself gives its ports
// back (the engine unbinds them too).
func TestBrokerPortsOnExit(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, func(c *Config) { c.PortRange = [2]int{32000, 32009} })
	waitConnected(t, b)
	hub.status(wire.MethodAgentCreate, withPorts("a1", true, 8080))
	if err := rt.SimulateExit("a1", 0); err != nil {
		t.Fatal(err)
	}
	if st := recv(t, hub.statuses, "agent.status"); st.State != runtime.StateExited || st.Ports != nil {
		t.Fatalf("exit reported as %+v", st)
	}
	wait.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		if free := b.freePorts(); free != 10 {
			return fmt.Errorf("%d ports free, want 10: the exited agent's port has not returned", free)
		}
		return nil
	})
}

// TestBrokerPortsAfterRestart: a new broker process over the same
// containers rebuilds the pool from their labels: running and created
// containers keep their ports, a stopped one does not, and the inventory
// reports the mappings.
func TestBrokerPortsAfterRestart(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	edit := func(c *Config) { c.PortRange = [2]int{32000, 32003} }
	b := startBroker(t, hub, rt, edit)
	waitConnected(t, b)
	run := mappedHosts(t, hub.status(wire.MethodAgentCreate, withPorts("run", true, 80)), 1)
	created := mappedHosts(t, hub.status(wire.MethodAgentCreate, withPorts("made", false, 80)), 1)
	hub.status(wire.MethodAgentCreate, withPorts("stopped", true, 80))
	hub.status(wire.MethodAgentStop, wire.AgentRef{AgentID: "stopped", GraceMS: 10})

	hub2 := newTestHub(t)
	b2 := startBroker(t, hub2, rt.Restart(), edit)
	hello := recv(t, hub2.hellos, "hello")
	waitConnected(t, b2)
	if h := b2.portHolders(); h[run[0]] != "run" || h[created[0]] != "made" || b2.freePorts() != 2 {
		t.Fatalf("rebuilt pool: %d held by %q, %d by %q, %d free", run[0], h[run[0]],
			created[0], h[created[0]], b2.freePorts())
	}
	for _, st := range hello.Inventory {
		if want := map[string]int{"run": 1, "made": 1, "stopped": 0}[st.AgentID]; len(st.Ports) != want {
			t.Errorf("inventory: %s reports ports %v, want %d", st.AgentID, st.Ports, want)
		}
	}
	// New agents get the two free ports and no more.
	mappedHosts(t, hub2.status(wire.MethodAgentCreate, withPorts("new", false, 80, 81)), 2)
	wantCode(t, hub2.call(wire.MethodAgentCreate, withPorts("more", false, 80), nil), api.CodePortPoolExhausted)
}

// TestCreateRetriesATakenHostPort: when the engine refuses a start because
// a pool port is taken on the host by something the pool does not know,
// the create is undone and made again with the next ports.
func TestCreateRetriesATakenHostPort(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, func(c *Config) { c.PortRange = [2]int{32100, 32103} })
	waitConnected(t, b)
	rt.FailNext("Start", fmt.Errorf("engine: Bind for 127.0.0.1:32100 failed: %w", runtime.ErrHostPortTaken))
	st := hub.status(wire.MethodAgentCreate, withPorts("a1", true, 8080))
	got := mappedHosts(t, st, 1)
	if got[0] == 32100 {
		t.Fatalf("the retry published the taken port again: %v", got)
	}
	if st.State != runtime.StateRunning {
		t.Fatalf("state %s after the retry", st.State)
	}
	if n := rt.Calls("Create"); n != 2 {
		t.Fatalf("%d container creates, want 2 (the first undone)", n)
	}

	// The port the engine names stays out of the next try, even where the
	// pool's next lap would come back to it: a 2-port agent on 3 free
	// ports (a1 holds one) that loses 32102 tries 32103 and 32100.
	rt.FailNext("Start", fmt.Errorf("engine: %w", &runtime.HostPortTakenError{Port: 32102}))
	st = hub.status(wire.MethodAgentCreate, withPorts("a2", true, 8080, 9090))
	if got := mappedHosts(t, st, 2); slices.Contains(got, 32102) || slices.Contains(got, b.heldPorts("a1")[0]) {
		t.Fatalf("the retry published %v; the engine refused 32102 and a1 holds %v", got, b.heldPorts("a1"))
	}
}

// hostPortRuntime is the fake runtime on an engine other clients publish
// ports on too (runtime.HostPortLister).
type hostPortRuntime struct {
	*fake.Runtime
	mu      sync.Mutex
	foreign []int
	err     error
}

func (r *hostPortRuntime) ForeignHostPorts(context.Context) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.foreign), r.err
}

// TestCreatePassesOverForeignHostPorts: host ports the engine gives to
// others (another broker's agent, stopped, so nothing binds its port now)
// are not handed out, though they are in the range and the pool has them
// free; an engine that cannot list them leaves the pool to its own view.
func TestCreatePassesOverForeignHostPorts(t *testing.T) {
	hub := newTestHub(t)
	rt := &hostPortRuntime{Runtime: fake.New(), foreign: []int{32200, 32202, 40000}}
	b := startBroker(t, hub, rt, func(c *Config) { c.PortRange = [2]int{32200, 32203} })
	waitConnected(t, b)
	if got := mappedHosts(t, hub.status(wire.MethodAgentCreate, withPorts("a1", false, 8080, 9090)), 2); !slices.Equal(got, []int{32201, 32203}) {
		t.Fatalf("a1 got %v, want the ports no one else holds, 32201 and 32203", got)
	}
	err := hub.call(wire.MethodAgentCreate, withPorts("a2", false, 8080), nil)
	wantCode(t, err, api.CodePortPoolExhausted)
	if !strings.Contains(err.Error(), "other brokers' agents") {
		t.Errorf("exhaustion %q does not say the ports are held on the host", err)
	}
	rt.mu.Lock()
	rt.err = errors.New("engine busy")
	rt.mu.Unlock()
	if got := mappedHosts(t, hub.status(wire.MethodAgentCreate, withPorts("a2", false, 8080)), 1); got[0] != 32200 && got[0] != 32202 {
		t.Fatalf("without the engine's list a2 got %v, want a port the pool has free", got)
	}
}
