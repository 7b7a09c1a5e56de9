package plan

import (
	"slices"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

func TestPlanReconcileFleet(t *testing.T) {
	agents := []*store.Agent{
		{ID: "run", BrokerID: "b1", Phase: api.PhaseRunning},
		{ID: "flying", BrokerID: "b1", Phase: api.PhaseProvisioning},
		{ID: "gone", BrokerID: "b1", Phase: api.PhaseRunning},
	}
	p := Reconcile(ReconcileInput{BrokerID: "b1", Agents: agents,
		Inventory: []wire.AgentStatus{{AgentID: "run", State: api.ContainerRunning}, {AgentID: "stranger", State: api.ContainerRunning},
			{AgentID: "flying", State: api.ContainerRunning}},
		// moved: its slot is on b1 but it is no longer; moving: the same,
		// with a command in flight.
		Reserved: []string{"run", "flying", "moved", "moving"},
		InFlight: map[string]bool{"flying": true, "moving": true}})
	var applied []string
	for _, s := range p.Apply {
		applied = append(applied, s.Agent.ID+":"+s.Status.State)
	}
	if !slices.Equal(applied, []string{"run:running", "gone:missing"}) {
		t.Errorf("applied %v", applied)
	}
	if !slices.Equal(p.Skipped, []string{"flying"}) {
		t.Errorf("an agent in flight is left to its command: skipped %v", p.Skipped)
	}
	if !slices.Equal(p.Release, []string{"moved"}) {
		t.Errorf("the slot of an agent no longer on the broker is freed, unless in flight: %v", p.Release)
	}
	if !slices.Equal(p.Unknown, []string{"stranger"}) {
		t.Errorf("a container with no agent is flagged, never deleted: %v", p.Unknown)
	}
	if r, rel := SlotChange(nil, true); r || rel {
		t.Error("an agent deleted meanwhile: no slot change")
	}
}

// TestPlanReconcileMisplaced: a pinned agent whose placement is
// inconsistent keeps its record and its slot through a reconciliation,
// except one pinned to this broker, assigned elsewhere, whose container
// this broker (serving the pinned target) no longer reports: gone.
func TestPlanReconcileMisplaced(t *testing.T) {
	kube, docker := tKube, tDocker
	pinned := func(id, brokerID string) *store.Agent {
		return &store.Agent{ID: id, BrokerID: brokerID, Phase: api.PhaseStopped, ContainerStatus: api.ContainerStopQueued,
			Pin: &api.PinnedRuntimeTarget{BrokerID: "b1", RuntimeTarget: tKube}}
	}
	for _, tc := range []struct {
		name      string
		broker    *store.Broker
		agent     *store.Agent // assigned to b1, or held here only
		reported  bool
		misplaced bool
		release   bool
		applied   bool
	}{
		{"consistent: reconciled as usual", tFlat("b1", &kube), pinned("a", "b1"), false, false, false, true},
		{"broker serves another target, not reported", tFlat("b1", &docker), pinned("a", "b1"), false, true, false, false},
		{"broker serves no single target, reported", tFlat("b1", nil), pinned("a", "b1"), true, true, false, false},
		{"assigned here, pinned elsewhere", tFlat("b1", &kube), func() *store.Agent { a := pinned("a", "b1"); a.Pin.BrokerID = "b9"; return a }(), false, true, false, false},
		{"pin incomplete", tFlat("b1", &kube), func() *store.Agent { a := pinned("a", "b1"); a.Pin.Namespace = ""; return a }(), true, true, false, false},
		{"pinned here, assigned elsewhere, container reported", tFlat("b1", &kube), pinned("a", "b2"), true, true, false, false},
		{"pinned here, assigned elsewhere, container gone", tFlat("b1", &kube), pinned("a", "b2"), false, false, true, false},
		{"pinned here, assigned elsewhere, broker serves another target", tFlat("b1", &docker), pinned("a", "b2"), false, true, false, false},
		{"pinned elsewhere, assigned elsewhere: its slot here is freed", tFlat("b1", &kube), func() *store.Agent { a := pinned("a", "b2"); a.Pin.BrokerID = "b2"; return a }(), false, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ReconcileInput{BrokerID: "b1", Broker: tc.broker, Reserved: []string{"a"}, InFlight: map[string]bool{}, Elsewhere: map[string]*store.Agent{}}
			if tc.agent.BrokerID == "b1" {
				in.Agents = []*store.Agent{tc.agent}
			} else {
				in.Elsewhere["a"] = tc.agent
			}
			if tc.reported {
				in.Inventory = []wire.AgentStatus{{AgentID: "a", State: api.ContainerRunning}}
			}
			p := Reconcile(in)
			if got := slices.Equal(p.Misplaced, []string{"a"}); got != tc.misplaced {
				t.Errorf("misplaced %v", p.Misplaced)
			}
			if got := slices.Equal(p.Release, []string{"a"}); got != tc.release {
				t.Errorf("release %v", p.Release)
			}
			if got := len(p.Apply) == 1; got != tc.applied {
				t.Errorf("apply %+v", p.Apply)
			}
			if len(p.Unknown) != 0 {
				t.Errorf("a misplaced agent's container is known, not flagged: %v", p.Unknown)
			}
		})
	}
}
