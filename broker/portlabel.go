package broker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/scion-go/scion/api"
)

// labelPorts is the container label that carries an agent's published
// ports, "container[/proto]:host,...", e.g. "8080:31000,9090/udp:31001".
// It is a contract with the runtimes (runtime/docker publishes exactly
// these; see its package documentation) and the broker's record of which
// pool ports a container owns. It is spelled out here rather than
// imported so the broker does not depend on the Docker runtime.
const labelPorts = "scion.ports"

// formatPorts renders mappings as a labelPorts value.
func formatPorts(ms []api.PortMapping) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		s := strconv.Itoa(m.ContainerPort)
		if m.Protocol != "" && m.Protocol != "tcp" {
			s += "/" + m.Protocol
		}
		parts[i] = s + ":" + strconv.Itoa(m.HostPort)
	}
	return strings.Join(parts, ",")
}

// parsePorts reads a labelPorts value. Mappings without a host port (the
// engine picks one) are kept with HostPort 0; the pool ignores them.
func parsePorts(s string) ([]api.PortMapping, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []api.PortMapping
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		cport, hport, hasHost := strings.Cut(item, ":")
		cport, proto, _ := strings.Cut(cport, "/")
		m := api.PortMapping{Protocol: strings.ToLower(proto)}
		if m.Protocol == "" {
			m.Protocol = "tcp"
		}
		if m.Protocol != "tcp" && m.Protocol != "udp" {
			return nil, fmt.Errorf("%s %q: protocol must be tcp or udp", labelPorts, item)
		}
		var err error
		if m.ContainerPort, err = portNumber(cport, false); err != nil {
			return nil, fmt.Errorf("%s %q: container port: %w", labelPorts, item, err)
		}
		if hasHost {
			if m.HostPort, err = portNumber(hport, true); err != nil {
				return nil, fmt.Errorf("%s %q: host port: %w", labelPorts, item, err)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func portNumber(s string, zeroOK bool) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 || (n == 0 && !zeroOK) {
		return 0, fmt.Errorf("%q is not a port number", s)
	}
	return n, nil
}

// hostPorts are the pool ports in ms (those with a host port).
func hostPorts(ms []api.PortMapping) []int {
	var out []int
	for _, m := range ms {
		if m.HostPort != 0 {
			out = append(out, m.HostPort)
		}
	}
	return out
}
