package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/portpool"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// DefaultPortRange is the host port range a broker publishes agent ports
// from when Config.PortRange is unset.
var DefaultPortRange = [2]int{31000, 31999}

// Published ports, the broker's side. The rules:
//
//   - A create takes fresh host ports from the pool for spec.Ports and
//     writes the mapping into the container's scion.ports label; an
//     exhausted pool fails the create (port_pool_exhausted) before anything
//     is made.
//   - A container holds its ports while it is created, running or paused
//     (holdsPorts). Stopping it, its exit, or deleting it gives them back.
//   - Start, restart and resume take the container's original host ports
//     again (the runtime cannot change them without re-creating the
//     container). If another agent took one meanwhile, the command fails
//     with a conflict naming the port and that agent, and nothing runs.
//   - After every command, under the agent's lock, the pool is aligned
//     with the state the runtime reports (syncPorts), so a failed or
//     partial command cannot leak or double-book a port.
//   - The pool is memory only. A restarted broker rebuilds it from the
//     labels of the containers the runtime still has (loadPorts): the
//     label is written atomically with the container, so there is no side
//     file to disagree with the engine after a crash.
//
// The pool only knows this broker's agents. What else holds a port of
// its range is learnt at each create: a probe of the host (any program
// bound to it) and, from a runtime that shares its engine
// (runtime.HostPortLister), the ports of the engine's other containers,
// other brokers' agents included even while stopped. Two brokers on one
// host may so share a range. What neither shows (a program binding a port
// after the create, a race with another broker's create) fails a start:
// a create then retries with other ports; a start again of a stopped
// agent cannot, and fails naming the port.

// holdsPorts reports whether a container in state keeps its host ports. A
// created container has not bound them yet but will at its first start; a
// paused one still has them bound.
func holdsPorts(state string) bool {
	return state == runtime.StateCreated || state == runtime.StatePending || state == runtime.StateRunning || state == runtime.StatePaused
}

// statusPorts are the mappings a status reports: the label's, while the
// container holds them.
func statusPorts(s runtime.Status) []api.PortMapping {
	if !holdsPorts(s.State) {
		return nil
	}
	ms, err := parsePorts(s.Labels[labelPorts])
	if err != nil {
		return nil
	}
	return ms
}

// loadPorts rebuilds the pool from the runtime's inventory the first time
// the pool is needed (Run tries it early). Every pool operation comes
// after it, and every command re-aligns its agent afterwards under the
// agent's lock, so a command racing with the inventory read still leaves
// the pool right. If the inventory cannot be read the command fails and
// the next one tries again.
func (b *Broker) loadPorts(ctx context.Context) error {
	b.portsMu.Lock()
	defer b.portsMu.Unlock()
	if b.portsLoaded {
		return nil
	}
	sts, err := b.rt.Inventory(ctx)
	if err != nil {
		return fmt.Errorf("rebuild the port pool from the runtime inventory: %w", err)
	}
	// Running and paused containers have their ports bound, so they win a
	// (hand-made) clash with a container that was only created.
	slices.SortStableFunc(sts, func(x, y runtime.Status) int {
		return boolRank(x.State == runtime.StateCreated) - boolRank(y.State == runtime.StateCreated)
	})
	for _, st := range sts {
		if !holdsPorts(st.State) {
			continue
		}
		ms, err := parsePorts(st.Labels[labelPorts])
		if err != nil {
			b.log.Warn("port pool: unreadable ports label", "agent", st.AgentID, "err", err)
			continue
		}
		if err := b.ports.Acquire(st.AgentID, hostPorts(ms)); err != nil {
			b.log.Warn("port pool: two containers claim one host port", "agent", st.AgentID, "err", err)
		}
	}
	b.portsLoaded = true
	return nil
}

// portsReady reports whether the pool was loaded, waiting for a load in
// progress.
func (b *Broker) portsReady() bool {
	b.portsMu.Lock()
	defer b.portsMu.Unlock()
	return b.portsLoaded
}

func boolRank(v bool) int {
	if v {
		return 1
	}
	return 0
}

// allocatePorts takes host ports for a new agent's spec.Ports and returns
// the scion.ports label value ("" for none). It passes over the ports in
// refused (the engine refused them to an earlier try of this create) and
// those the runtime says other clients of its engine hold.
func (b *Broker) allocatePorts(ctx context.Context, spec wire.AgentSpec, refused map[int]bool) (string, error) {
	if len(spec.Ports) == 0 {
		return "", nil
	}
	if err := api.ValidatePorts(spec.Ports); err != nil {
		return "", err
	}
	if err := b.loadPorts(ctx); err != nil {
		return "", err
	}
	hosts, err := b.ports.Allocate(spec.AgentID, len(spec.Ports), b.foreignPorts(ctx, refused))
	if err != nil {
		return "", err
	}
	ms := make([]api.PortMapping, len(spec.Ports))
	for i, c := range spec.Ports {
		ms[i] = api.PortMapping{ContainerPort: c, HostPort: hosts[i], Protocol: "tcp"}
	}
	return formatPorts(ms), nil
}

// foreignPorts is refused plus the host ports the runtime's engine gives
// to others (runtime.HostPortLister): another broker on the same engine
// hands out ports from its own pool, maybe over the same range, and its
// stopped agents bind theirs again at their next start, when a probe of
// the host finds them free. Without the list (an engine that does not
// answer) the create goes on with what the pool and the probe know; a
// port taken after all is the start's error, and the create retries.
func (b *Broker) foreignPorts(ctx context.Context, refused map[int]bool) map[int]bool {
	l, ok := b.rt.(runtime.HostPortLister)
	if !ok {
		return refused
	}
	ports, err := l.ForeignHostPorts(ctx)
	if err != nil {
		b.log.Warn("port pool: cannot list the host ports other brokers' agents hold", "err", err)
		return refused
	}
	out := maps.Clone(refused)
	if out == nil {
		out = make(map[int]bool, len(ports))
	}
	for _, p := range ports {
		out[p] = true
	}
	return out
}

// acquirePorts takes an existing container's host ports again before it
// starts, restarts or resumes. An unknown agent is left to the runtime
// call that follows to report.
func (b *Broker) acquirePorts(ctx context.Context, agentID string) error {
	st, err := b.rt.Inspect(ctx, agentID)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ms, err := parsePorts(st.Labels[labelPorts])
	if err != nil {
		return err
	}
	hosts := hostPorts(ms)
	if len(hosts) == 0 {
		return nil
	}
	if err := b.loadPorts(ctx); err != nil {
		return err
	}
	var pc *portpool.Conflict
	if err := b.ports.Acquire(agentID, hosts); errors.As(err, &pc) {
		return b.conflictError(ctx, agentID, pc)
	} else if err != nil {
		return err
	}
	return nil
}

// conflictError explains a port taken while the agent was stopped, naming
// the other agent by slug when the runtime still knows it.
func (b *Broker) conflictError(ctx context.Context, agentID string, pc *portpool.Conflict) error {
	holder := pc.Holder
	if st, err := b.rt.Inspect(ctx, pc.Holder); err == nil && st.Labels[runtime.LabelSlug] != "" {
		holder = fmt.Sprintf("%s (%s)", st.Labels[runtime.LabelSlug], pc.Holder)
	}
	return api.Conflict(api.CodeConflict,
		"cannot start agent %s: its host port %d was given to agent %s while it was stopped; "+
			"stop or delete that agent, or delete and re-create this one to get new ports", agentID, pc.Port, holder).
		WithDetail("port", pc.Port).WithDetail("heldBy", pc.Holder)
}

// syncPorts aligns the pool with an agent's state after a command, under
// the agent's lock: st when the command succeeded, else what the runtime
// says now.
func (b *Broker) syncPorts(ctx context.Context, agentID string, st runtime.Status, opErr error) {
	if opErr != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		var err error
		st, err = b.rt.Inspect(cctx, agentID)
		switch {
		case errors.Is(err, runtime.ErrNotFound):
			st = runtime.Status{AgentID: agentID, State: runtime.StateMissing}
		case err != nil:
			return // unknown state: the next command or restart settles it
		}
		ctx = cctx
	}
	b.alignPorts(ctx, agentID, st)
}

// alignPorts makes the pool hold exactly the ports st says the agent's
// container holds.
func (b *Broker) alignPorts(ctx context.Context, agentID string, st runtime.Status) {
	var hosts []int
	if holdsPorts(st.State) {
		ms, err := parsePorts(st.Labels[labelPorts])
		if err != nil {
			b.log.Warn("port pool: unreadable ports label", "agent", agentID, "err", err)
			return
		}
		hosts = hostPorts(ms)
	}
	if len(hosts) == 0 {
		// Before the pool is loaded there is nothing to release, and the
		// load (which waits for a load in progress here) reads the
		// container's state after this command changed it. A port-less
		// agent need not wait for the inventory.
		if b.portsReady() {
			b.ports.Release(agentID)
		}
		return
	}
	if err := b.loadPorts(ctx); err != nil {
		b.log.Warn("port pool", "agent", agentID, "err", err)
		return
	}
	if err := b.ports.Acquire(agentID, hosts); err != nil {
		b.log.Warn("port pool: container holds a port another agent has", "agent", agentID, "err", err)
	}
}
