package docker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"
	"github.com/docker/go-units"
)

// Spec labels that ask for per-agent options; see the package
// documentation. They stay on the container like every other label.
const (
	LabelPorts  = "scion.ports"
	LabelTTY    = "scion.tty"
	LabelMemory = "scion.memory"
	LabelCPUs   = "scion.cpus"
)

// PortMapping publishes one container port on the broker host.
type PortMapping struct {
	// Container is the port inside the container.
	Container int
	// Host is the port on the broker host; 0 lets the engine choose.
	Host int
	// Proto is "tcp" (the default when empty) or "udp".
	Proto string
}

// ParsePorts parses a scion.ports label value:
// "container[/proto][:host],..."; an empty value is no ports.
func ParsePorts(s string) ([]PortMapping, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []PortMapping
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		cport, hport, hasHost := strings.Cut(item, ":")
		cport, proto, _ := strings.Cut(cport, "/")
		m := PortMapping{Proto: strings.ToLower(proto)}
		if m.Proto == "" {
			m.Proto = "tcp"
		}
		if m.Proto != "tcp" && m.Proto != "udp" {
			return nil, fmt.Errorf("%s %q: protocol must be tcp or udp", LabelPorts, item)
		}
		var err error
		if m.Container, err = parsePort(cport, false); err != nil {
			return nil, fmt.Errorf("%s %q: container port: %w", LabelPorts, item, err)
		}
		if hasHost {
			if m.Host, err = parsePort(hport, true); err != nil {
				return nil, fmt.Errorf("%s %q: host port: %w", LabelPorts, item, err)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func parsePort(s string, zeroOK bool) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 || (n == 0 && !zeroOK) {
		return 0, fmt.Errorf("%q is not a port number", s)
	}
	return n, nil
}

// portMaps gives the engine's exposed ports and host bindings for ms.
func portMaps(ms []PortMapping, bindAddr string) (nat.PortSet, nat.PortMap) {
	exposed := nat.PortSet{}
	bindings := nat.PortMap{}
	for _, m := range ms {
		p := nat.Port(fmt.Sprintf("%d/%s", m.Container, m.Proto))
		exposed[p] = struct{}{}
		host := ""
		if m.Host != 0 {
			host = strconv.Itoa(m.Host)
		}
		bindings[p] = append(bindings[p], nat.PortBinding{HostIP: bindAddr, HostPort: host})
	}
	return exposed, bindings
}

// resources are the runtime's default limits with the spec's label
// overrides.
func (r *Runtime) resources(labels map[string]string) (container.Resources, error) {
	res := container.Resources{Memory: r.opts.Resources.Memory, NanoCPUs: r.opts.Resources.NanoCPUs}
	if v := labels[LabelMemory]; v != "" {
		n, err := units.RAMInBytes(v)
		if err != nil || n <= 0 {
			return res, fmt.Errorf("%s %q: want a size such as 512m or 2g", LabelMemory, v)
		}
		res.Memory = n
	}
	if v := labels[LabelCPUs]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1024 {
			return res, fmt.Errorf("%s %q: want a number of CPUs such as 1.5", LabelCPUs, v)
		}
		res.NanoCPUs = int64(f * 1e9)
	}
	return res, nil
}
