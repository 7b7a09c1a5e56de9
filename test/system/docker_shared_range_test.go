package system

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/docker"
)

// TestDockerTwoBrokersShareARange: two broker processes on one host and
// one Docker Engine, given the same two-port range (what two workstations
// on the default range amount to). An agent of the first publishes a port
// and is stopped, so nothing binds that port; the second broker's agent
// still gets the other port, and the first agent starts again on its own
// port. The second broker used to find the stopped agent's port free and
// hand it out, and the first agent's start failed with the engine's "port
// is already allocated"; with both ports so held, a third agent finds the
// pool exhausted instead.
func TestDockerTwoBrokersShareARange(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	portRange, lo := smallPortRange(t, 2)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	admin.mustScion(t, "hub", "settings", "set", "--default-image", docker.DemoImage)
	setupDockerBroker(t, cl, hub, token, "one", portRange, "default")
	setupDockerBroker(t, cl, hub, token, "two", portRange, "default")
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"one": api.BrokerOnline, "two": api.BrokerOnline})
	})

	start := func(name, broker string) (api.Agent, error) {
		var a api.Agent
		err := admin.scionJSONCmd(&a, "start", name, "--broker", broker, "--port", fmt.Sprint(agentPort), "--", "scion", "agent-demo", "--stay", "--steps", "0")
		if err == nil && (a.Phase != api.PhaseRunning || len(a.Ports) != 1 || a.Ports[0].HostPort < lo || a.Ports[0].HostPort > lo+1) {
			err = fmt.Errorf("scion start %s --broker %s: phase %s (%s), ports %+v; want running on a host port of %s", name, broker, a.Phase, a.StatusMessage, a.Ports, portRange)
		}
		return a, err
	}
	first, err := start("first", "one")
	if err != nil {
		t.Fatal(err)
	}
	admin.mustScion(t, "stop", "first")
	second, err := start("second", "two")
	if err != nil {
		t.Fatal(err)
	}
	if second.Ports[0].HostPort == first.Ports[0].HostPort {
		t.Fatalf("broker two gave %s host port %d, which broker one's stopped agent %s holds", second.Slug, second.Ports[0].HostPort, first.Slug)
	}
	var again api.Agent
	admin.mustScionJSON(t, &again, "start", "first")
	if again.Phase != api.PhaseRunning || len(again.Ports) != 1 || again.Ports[0] != first.Ports[0] {
		t.Errorf("scion start first again: phase %s (%s), ports %+v; want running on its port %+v", again.Phase, again.StatusMessage, again.Ports, first.Ports)
	}
	_, errOut, code, err := admin.scionCode(nil, "start", "third", "--broker", "two", "--port", fmt.Sprint(agentPort), "--", "scion", "agent-demo", "--stay")
	if err != nil || code == 0 || !strings.Contains(errOut, api.CodePortPoolExhausted) {
		t.Errorf("a third agent on the shared 2-port range: exit %d (%v), stderr %q; want port_pool_exhausted", code, err, errOut)
	}
	forEach(t, []string{"first", "second", "third"}, func(n string) error { _, _, err := admin.scion("delete", n); return err })
}
