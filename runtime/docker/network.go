package docker

import (
	"context"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// AgentNetwork is the bridge network a broker beside a loopback Hub puts
// its agents on. The broker creates it (labelled scion.managed=true) and
// reaches it through its gateway address.
const AgentNetwork = "scion-agents"

// EnsureNetwork makes sure a bridge network exists and returns its
// gateway address, the host's address as the network's containers see it.
func EnsureNetwork(ctx context.Context, cli client.NetworkAPIClient, name string) (gateway string, err error) {
	inspect := func() (string, error) {
		n, err := cli.NetworkInspect(ctx, name, network.InspectOptions{})
		if err != nil {
			return "", err
		}
		for _, c := range n.IPAM.Config {
			if c.Gateway != "" {
				return c.Gateway, nil
			}
		}
		return "", fmt.Errorf("docker runtime: network %s has no gateway address", name)
	}
	gw, err := inspect()
	if err == nil {
		return gw, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("docker runtime: inspect network %s: %w", name, err)
	}
	_, err = cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: map[string]string{"scion.managed": "true"}})
	if err != nil && !isConflict(err) { // another broker made it meanwhile
		return "", fmt.Errorf("docker runtime: create network %s: %w", name, err)
	}
	return inspect()
}

// isConflict reports the engine's answer to creating a network that
// exists already.
func isConflict(err error) bool {
	return cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "already exists")
}
