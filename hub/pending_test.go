package hub

import (
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// TestPendingContainer: a container its runtime started but that does not
// run (a Kubernetes pod no node takes) is provisioning with the runtime's
// reason, never running, whether a start's answer or a later report says
// so; running clears the reason.
func TestPendingContainer(t *testing.T) {
	const why = "pending: Unschedulable: 0/1 nodes are available: 1 node(s) were unschedulable."
	if got := lifecycle.PhaseFor(api.ContainerPending, true); got != api.PhaseProvisioning {
		t.Errorf("lifecycle.PhaseFor(pending) = %s, want provisioning", got)
	}
	a := &store.Agent{ID: "a", Phase: api.PhaseRunning, ContainerStatus: api.ContainerRunning}
	applyContainerState(a, wire.AgentStatus{AgentID: "a", State: api.ContainerPending, Message: why})
	if a.Phase != api.PhaseProvisioning || a.ContainerStatus != api.ContainerPending || a.StatusMessage != why {
		t.Fatalf("after a pending report: %s/%s %q, want provisioning/pending with the reason", a.Phase, a.ContainerStatus, a.StatusMessage)
	}
	if !lifecycle.HoldsSlot(a.Phase) {
		t.Error("a pending agent gave up its slot: the next start would overbook the broker")
	}
	const later = "pending: ImagePullBackOff: Back-off pulling image \"x\""
	applyContainerState(a, wire.AgentStatus{AgentID: "a", State: api.ContainerPending, Message: later})
	if a.Phase != api.PhaseProvisioning || a.StatusMessage != later {
		t.Fatalf("a new reason: %s %q", a.Phase, a.StatusMessage)
	}
	applyContainerState(a, wire.AgentStatus{AgentID: "a", State: api.ContainerRunning})
	if a.Phase != api.PhaseRunning || a.StatusMessage != "" {
		t.Fatalf("after running: %s %q, want running with no stale reason", a.Phase, a.StatusMessage)
	}
	// A stopped agent is not made provisioning by a late report.
	s := &store.Agent{ID: "s", Phase: api.PhaseStopped, ContainerStatus: api.ContainerExited}
	applyContainerState(s, wire.AgentStatus{AgentID: "s", State: api.ContainerPending, Message: why})
	if s.Phase != api.PhaseStopped {
		t.Errorf("stopped agent after a pending report: %s", s.Phase)
	}
	// A queued stop still applies to a pending container.
	q := &store.Agent{ID: "q", Phase: api.PhaseStopped, ContainerStatus: api.ContainerStopQueued}
	applyContainerState(q, wire.AgentStatus{AgentID: "q", State: api.ContainerPending})
	if q.ContainerStatus != api.ContainerStopQueued {
		t.Errorf("queued stop of a pending container: container %s, want still stop_queued", q.ContainerStatus)
	}
}
