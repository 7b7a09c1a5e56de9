package hub

import (
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// TestReconcileApplied runs a reconciliation without a store: the plan, then
// each status applied as applyStatus applies it (applyContainerState), then
// the slot change that follows.
func TestReconcileApplied(t *testing.T) {
	exit0 := 0
	agent := func(id, phase, cs string) *store.Agent {
		return &store.Agent{ID: id, BrokerID: "b1", RunID: "run-" + id, Phase: phase, ContainerStatus: cs}
	}
	report := func(id, state string) wire.AgentStatus {
		return wire.AgentStatus{AgentID: id, RunID: "run-" + id, State: state, ExitCode: &exit0}
	}
	type want struct {
		phase string
		slot  string // "reserve", "release" or ""
	}
	for _, tc := range []struct {
		name     string
		agent    *store.Agent
		held     bool
		reported *wire.AgentStatus
		want     want
	}{
		{"container gone frees the slot", agent("a", api.PhaseRunning, api.ContainerRunning), true, nil,
			want{api.PhaseStopped, "release"}},
		{"container exited frees the slot", agent("a", api.PhaseRunning, api.ContainerRunning), true, &[]wire.AgentStatus{report("a", api.ContainerExited)}[0],
			want{api.PhaseStopped, "release"}},
		{"running without a slot is re-adopted", agent("a", api.PhaseStopped, api.ContainerExited), false, &[]wire.AgentStatus{report("a", api.ContainerRunning)}[0],
			want{api.PhaseRunning, "reserve"}},
		{"running with its slot: nothing to do", agent("a", api.PhaseRunning, api.ContainerRunning), true, &[]wire.AgentStatus{report("a", api.ContainerRunning)}[0],
			want{api.PhaseRunning, ""}},
		{"an interrupted create is an error, its slot freed", agent("a", api.PhaseProvisioning, ""), true, nil,
			want{api.PhaseError, "release"}},
		{"stop_queued, still running: keeps its slot", agent("a", api.PhaseStopped, api.ContainerStopQueued), true, &[]wire.AgentStatus{report("a", api.ContainerRunning)}[0],
			want{api.PhaseStopped, ""}},
		{"stop_queued, gone: the stop is moot, the slot freed", agent("a", api.PhaseStopped, api.ContainerStopQueued), true, nil,
			want{api.PhaseStopped, "release"}},
		{"suspended, gone: stopped, it held no slot", agent("a", api.PhaseSuspended, api.ContainerPaused), false, nil,
			want{api.PhaseStopped, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := plan.ReconcileInput{BrokerID: "b1", Agents: []*store.Agent{tc.agent}, InFlight: map[string]bool{}}
			if tc.held {
				in.Reserved = []string{tc.agent.ID}
			}
			if tc.reported != nil {
				in.Inventory = []wire.AgentStatus{*tc.reported}
			}
			p := plan.Reconcile(in)
			if len(p.Apply) != 1 || len(p.Release)+len(p.Unknown)+len(p.Skipped) != 0 {
				t.Fatalf("plan %+v", p)
			}
			step := p.Apply[0]
			if tc.reported == nil && step.Status.State != api.ContainerMissing {
				t.Fatalf("an agent not reported is applied as missing, got %+v", step.Status)
			}
			if step.Held != tc.held {
				t.Fatalf("held %v", step.Held)
			}
			got := *step.Agent
			applyContainerState(&got, step.Status)
			reserve, release := plan.SlotChange(&got, step.Held)
			slot := map[[2]bool]string{{true, false}: "reserve", {false, true}: "release"}[[2]bool{reserve, release}]
			if got.Phase != tc.want.phase || slot != tc.want.slot {
				t.Fatalf("phase %s slot %q, want %+v", got.Phase, slot, tc.want)
			}
		})
	}
}
