package system

import (
	"fmt"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// processBroker sets up a broker host like setupBroker, but with the
// process runtime, so its agents are real local processes running the
// scion binary.
func processBroker(t *testing.T, hub *hubProc, token, name string) *brokerHost {
	t.Helper()
	b := &brokerHost{host: newHost(t, name), brokerName: name}
	b.useHub(t, hub.URL, token)
	var reg registration
	b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
	b.brokerID = reg.BrokerID
	b.mustScion(t, "runtime-broker", "provide", "--project", "default")
	b.proc = b.start(t, "broker-"+name, append([]string{"runtime-broker", "start", "--runtime", "process"}, hbFlags...)...)
	return b
}

// TestAgentLaunchedAgentLandsByCascade: an agent running on broker b1
// runs `scion start` (no --hub: its environment names the Hub and carries
// its token); with the project's default broker set to b2, the child
// lands on b2, not on its creator's broker, and records its parent.
func TestAgentLaunchedAgentLandsByCascade(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	processBroker(t, hub, token, "b1")
	processBroker(t, hub, token, "b2")
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"b1": api.BrokerOnline, "b2": api.BrokerOnline})
	})
	t.Cleanup(func() { // the process runtime's agents are real processes
		for _, a := range []string{"kid", "parent"} {
			_, _, _ = admin.scion("delete", a)
		}
	})
	admin.mustScion(t, "project", "set", "default", "--default-broker", "b2")
	admin.mustScion(t, "start", "parent", "--broker", "b1", "--", "scion", "agent-demo", "--steps", "0", "--start-child", "kid", "--stay")

	var parent, kid api.Agent
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		agents, err := admin.agentsBySlug()
		if err != nil {
			return err
		}
		var ok bool
		if parent, ok = agents["parent"]; !ok {
			return fmt.Errorf("no parent agent")
		}
		if kid, ok = agents["kid"]; !ok || kid.Phase != api.PhaseRunning {
			out, _, _ := admin.scion("logs", "parent")
			return fmt.Errorf("kid not running yet (%+v); parent's output:\n%s", kid, out)
		}
		return nil
	})
	if parent.BrokerName != "b1" {
		t.Fatalf("parent on %s, want b1", parent.BrokerName)
	}
	if kid.BrokerName != "b2" || kid.ParentAgentID != parent.ID || kid.CreatedBy != "agent:"+parent.ID {
		t.Fatalf("kid = broker %s, parent %s, created by %s; want b2 (the project's default), parent %s", kid.BrokerName, kid.ParentAgentID, kid.CreatedBy, parent.ID)
	}
}
