package broker

import (
	"errors"
	"slices"

	"github.com/scion-go/scion/broker/portpool"
)

// portProbe is the holder portHolders takes a free port in for a moment;
// no agent ID is empty.
const portProbe = ""

// portHolders is the broker's pool as its own calls see it: Acquire of a
// port another agent holds fails naming the holder, and a free port it
// takes is given straight back. Ports of the broker's range only.
func (b *Broker) portHolders() map[int]string {
	out := map[int]string{}
	for port := b.cfg.PortRange[0]; port <= b.cfg.PortRange[1]; port++ {
		var pc *portpool.Conflict
		if err := b.ports.Acquire(portProbe, []int{port}); errors.As(err, &pc) {
			out[port] = pc.Holder
		}
		b.ports.Release(portProbe)
	}
	return out
}

// freePorts is how many ports of the range no agent holds.
func (b *Broker) freePorts() int {
	return b.cfg.PortRange[1] - b.cfg.PortRange[0] + 1 - len(b.portHolders())
}

// heldPorts are the ports of the range agentID holds, ascending.
func (b *Broker) heldPorts(agentID string) []int {
	var out []int
	for port, h := range b.portHolders() {
		if h == agentID {
			out = append(out, port)
		}
	}
	slices.Sort(out)
	return out
}
