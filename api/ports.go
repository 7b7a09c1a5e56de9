package api

import "fmt"

// MaxAgentPorts is how many container ports one agent may ask to expose.
// Host ports come from a broker's finite pool; a cap keeps one agent from
// draining it.
const MaxAgentPorts = 16

// PortMapping is one container port published on the broker host. The
// host port comes from the broker's port pool; Protocol is "tcp" or "udp"
// (empty means tcp). Agent.Ports lists them while the container holds its
// host ports (created, running, suspended) and is empty once it stopped:
// the ports are then back in the pool, and a later start takes the same
// host ports again or fails naming the agent that took one meanwhile.
type PortMapping struct {
	ContainerPort int    `json:"containerPort"`
	HostPort      int    `json:"hostPort"`
	Protocol      string `json:"protocol,omitempty"`
}

// ValidatePorts checks the container ports of a create request: 1..65535,
// at most MaxAgentPorts, no duplicates.
func ValidatePorts(ports []int) error {
	if len(ports) > MaxAgentPorts {
		return BadRequest("at most %d ports may be exposed per agent, got %d", MaxAgentPorts, len(ports))
	}
	seen := make(map[int]bool, len(ports))
	for _, p := range ports {
		if p < 1 || p > 65535 {
			return BadRequest("invalid port %d: container ports are 1..65535", p)
		}
		if seen[p] {
			return BadRequest("port %d is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// String renders a mapping as host->container/proto, e.g. "31000->8080/tcp".
func (m PortMapping) String() string {
	proto := m.Protocol
	if proto == "" {
		proto = "tcp"
	}
	return fmt.Sprintf("%d->%d/%s", m.HostPort, m.ContainerPort, proto)
}
