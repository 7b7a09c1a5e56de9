// Package portpool hands out a broker's host ports (the ones agents'
// published ports are mapped to) from a fixed range, all or nothing per
// agent, skipping ports something else on the host holds.
package portpool

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/scion-go/scion/api"
)

// Pool hands out host ports from a fixed range to agents. One mutex
// guards it, so concurrent allocations never hand out a port twice; every
// change is all-or-nothing for one agent.
//
// The pool lives in memory. Its truth is the scion.ports label on each
// agent's container (written atomically with the container, so it cannot
// disagree with the runtime the way a side file could after a crash); a
// restarted broker rebuilds it from those labels with Acquire.
type Pool struct {
	name   string // the broker's, for error messages
	lo, hi int

	mu    sync.Mutex
	owner map[int]string   // host port -> agent ID
	held  map[string][]int // agent ID -> its host ports
	// next is where the next allocation starts looking (next fit): a port
	// just released is the last to be handed out again, so a stopped
	// agent usually gets its ports back when it starts again.
	next int
	// busy, when set, reports a host port that something outside the pool
	// holds (another broker's agent on the same host, any other program),
	// so Allocate passes it over. See HostBusy.
	busy func(port int) bool
}

// CheckHost makes Allocate skip host ports that are in use on this host.
func (p *Pool) CheckHost(busy func(port int) bool) {
	p.mu.Lock()
	p.busy = busy
	p.mu.Unlock()
}

// HostBusy reports whether a TCP port cannot be bound on the loopback
// address (where agent ports are published) or on all addresses.
func HostBusy(port int) bool {
	for _, addr := range []string{"127.0.0.1", "0.0.0.0"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			return true
		}
		_ = ln.Close()
	}
	return false
}

// New returns an empty pool over the host ports lo..hi inclusive.
func New(name string, lo, hi int) (*Pool, error) {
	if lo < 1 || hi > 65535 || lo > hi {
		return nil, fmt.Errorf("port range %d-%d: want 1 <= first <= last <= 65535", lo, hi)
	}
	return &Pool{name: name, lo: lo, hi: hi, next: lo, owner: map[int]string{}, held: map[string][]int{}}, nil
}

// Size is how many ports the range has.
func (p *Pool) Size() int { return p.hi - p.lo + 1 }

// Allocate gives agentID n free ports from the range, replacing whatever
// it held (a new container gets new ports), passing over the ports in
// except as well: ports the host holds that neither the pool nor its probe
// can see (a container of another broker on the same engine, stopped; a
// port the engine just refused). With fewer than n free it takes nothing
// and fails with port_pool_exhausted.
func (p *Pool) Allocate(agentID string, n int, except map[int]bool) ([]int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(agentID)
	if n <= 0 {
		return nil, nil
	}
	if free := p.freeLocked(); free < n {
		return nil, api.Errorf(api.CodePortPoolExhausted,
			"port pool exhausted on runtime broker %s: %d of %d host ports (%d-%d) free, the agent needs %d; "+
				"stop or delete agents that publish ports, or widen the broker's port range",
			p.name, free, p.Size(), p.lo, p.hi, n).
			WithDetail("free", free).WithDetail("requested", n).WithDetail("range", fmt.Sprintf("%d-%d", p.lo, p.hi))
	}
	ports := make([]int, 0, n)
	port := p.next
	for range p.Size() { // one lap at most
		if len(ports) == n {
			break
		}
		if _, taken := p.owner[port]; !taken && !except[port] && (p.busy == nil || !p.busy(port)) {
			ports = append(ports, port)
		}
		if port++; port > p.hi {
			port = p.lo
		}
	}
	if len(ports) < n {
		return nil, api.Errorf(api.CodePortPoolExhausted,
			"port pool exhausted on runtime broker %s: the free ports of %d-%d are in use on the host (other programs, or other brokers' agents); "+
				"widen or move the broker's port range", p.name, p.lo, p.hi).
			WithDetail("requested", n).WithDetail("range", fmt.Sprintf("%d-%d", p.lo, p.hi))
	}
	for _, port := range ports {
		p.owner[port] = agentID
	}
	p.next = port
	p.held[agentID] = ports
	return slices.Clone(ports), nil
}

// Acquire takes exactly the given ports for agentID (a container starting
// again keeps the host ports it was created with). Ports it already holds
// are fine; ports outside the range are tracked too, so a range narrowed
// between broker runs still cannot hand them out twice. If another agent
// holds one, nothing changes and the error names the port and the holder.
func (p *Pool) Acquire(agentID string, ports []int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, port := range ports {
		if other, ok := p.owner[port]; ok && other != agentID {
			return &Conflict{Port: port, Holder: other}
		}
	}
	for _, port := range p.held[agentID] {
		if !slices.Contains(ports, port) {
			delete(p.owner, port)
		}
	}
	if len(ports) == 0 {
		delete(p.held, agentID)
		return nil
	}
	for _, port := range ports {
		p.owner[port] = agentID
	}
	p.held[agentID] = slices.Clone(ports)
	return nil
}

// Release returns agentID's ports to the pool (none held is fine).
func (p *Pool) Release(agentID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(agentID)
}

func (p *Pool) releaseLocked(agentID string) {
	for _, port := range p.held[agentID] {
		delete(p.owner, port)
	}
	delete(p.held, agentID)
}

func (p *Pool) freeLocked() int {
	used := 0
	for port := range p.owner {
		if port >= p.lo && port <= p.hi {
			used++
		}
	}
	return p.Size() - used
}

// Conflict is Acquire's error: another agent holds a port.
type Conflict struct {
	Port   int
	Holder string
}

func (e *Conflict) Error() string {
	return fmt.Sprintf("host port %d is held by agent %s", e.Port, e.Holder)
}
