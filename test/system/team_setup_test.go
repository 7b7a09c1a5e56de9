package system

import (
	"errors"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// TestTeamSetupFirstStartDocker walks docs/team-setup.md: a Hub started
// with --enable-hub, a separately started broker on Docker, nothing else
// configured (no default image in the Hub's settings). The first
// `scion start` runs an agent: the Docker broker offers the demo image it
// built locally, as the workstation does. It used to fail with a bare
// "no image".
func TestTeamSetupFirstStartDocker(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	b := setupDockerBroker(t, cl, hub, token, "team-dock", "", "default")
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"team-dock": api.BrokerOnline})
	})
	t.Cleanup(func() { _, _, _ = admin.scion("delete", "first") })

	var a api.Agent
	if err := admin.scionJSONCmd(&a, "start", "first", "--", "scion", "agent-demo", "--stay", "--steps", "0"); err != nil {
		t.Fatalf("the first scion start: %v", err)
	}
	if a.Phase != api.PhaseRunning {
		t.Fatalf("first agent: phase %s (%s), want running", a.Phase, a.StatusMessage)
	}
	cs := listContainers(t, cl, runtime.LabelAgentID+"="+a.ID)
	if len(cs) != 1 || cs[0].Image != "scion-demo:latest" || cs[0].Labels[runtime.LabelBrokerID] != b.brokerID {
		t.Fatalf("first agent's containers: %+v; want one of scion-demo:latest on the team broker", cs)
	}
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		out, _, err := admin.scion("logs", "first")
		if err != nil {
			return err
		}
		if len(out) == 0 {
			return errors.New("no output yet")
		}
		return nil
	})
	admin.mustScion(t, "delete", "first")
}
