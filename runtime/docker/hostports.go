package docker

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/scion-go/scion/runtime"
)

var _ runtime.HostPortLister = (*Runtime)(nil)

// ForeignHostPorts implements runtime.HostPortLister: the host ports of
// the engine's containers that are not this broker's agents. Another
// broker's agent counts with every port of its scion.ports label, in any
// state: a stopped one binds nothing now, so a probe of the host would
// find its port free, but it binds that port again at its next start.
// Any other running container counts with the ports it publishes (the
// engine may publish them without a listening proxy a probe would see).
// This broker's own agents are left to its pool.
func (r *Runtime) ForeignHostPorts(ctx context.Context) ([]int, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	cs, err := r.cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("docker runtime: list the engine's containers: %w", err)
	}
	return foreignPorts(cs, r.opts.BrokerID), nil
}

// foreignPorts are the host ports containers cs hold against broker
// brokerID's pool, sorted, each once. An unreadable label counts for
// nothing: the engine's published ports of a running container still do.
func foreignPorts(cs []container.Summary, brokerID string) []int {
	var out []int
	for _, c := range cs {
		agent := c.Labels[runtime.LabelAgentID] != ""
		if agent && c.Labels[runtime.LabelBrokerID] == brokerID {
			continue
		}
		if agent {
			ms, _ := ParsePorts(c.Labels[LabelPorts])
			for _, m := range ms {
				if m.Host != 0 {
					out = append(out, m.Host)
				}
			}
		}
		for _, p := range c.Ports {
			if p.PublicPort != 0 {
				out = append(out, int(p.PublicPort))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// takenRE finds the host port in the engine's refusals of a start over a
// taken port: Docker's "Bind for 0.0.0.0:31000 failed: port is already
// allocated", its userland proxy's and Podman's "listen tcp4
// 0.0.0.0:31000: bind: address already in use" ([::] for IPv6).
var takenRE = regexp.MustCompile(`(?:Bind for|listen (?:tcp|udp)[46]?) \S*:(\d+)\b`)

// hostPortTaken reads an engine's start error: whether it refuses a taken
// host port, and which one when it says (0 if not).
func hostPortTaken(cause string) (taken bool, port int) {
	if !strings.Contains(cause, "port is already allocated") && !strings.Contains(cause, "address already in use") {
		return false, 0
	}
	if m := takenRE.FindStringSubmatch(cause); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 && n <= 65535 {
			return true, n
		}
	}
	return true, 0
}
