package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// TestTransitionTable lists every (phase, action) pair, for the agent's
// container as the phase usually leaves it, with what the action does:
// the slot, the phase written first, the command, the offline queue.
func TestTransitionTable(t *testing.T) {
	// row: slot taken (R) or not (-), phase written first ("" none),
	// command sent, queued for an offline broker (Q) or refused (-).
	want := map[string]string{}
	row := func(phase, verb, v string) { want[phase+" "+verb] = v }
	for _, phase := range Phases {
		row(phase, "start", "R  start -")
		row(phase, "restart", "R  restart -")
		row(phase, "resume", "R  resume -")
		row(phase, "stop", "-  stop Q")
		row(phase, "suspend", "-  suspend -")
	}
	row(api.PhaseRunning, "stop", "- stopping stop Q")
	// An agent in error with no container (its create was refused, or
	// an inventory showed it gone): a running action creates it again.
	for _, verb := range []string{"start", "restart", "resume"} {
		row(api.PhaseError, verb, "R  create -")
	}
	container := map[string]string{api.PhaseCreated: api.ContainerCreated, api.PhaseProvisioning: api.ContainerCreated,
		api.PhaseRunning: api.ContainerRunning, api.PhaseStopping: api.ContainerRunning, api.PhaseStopped: api.ContainerExited,
		api.PhaseSuspended: api.ContainerPaused, api.PhaseError: api.ContainerNone, api.PhaseDeleting: api.ContainerExited}
	n := 0
	for _, phase := range Phases {
		for _, act := range Actions {
			p := PlanAction(act, phase, container[phase])
			got := fmt.Sprintf("%s %s %s %s", yes(p.Reserve, "R"), p.Before, p.Send, yes(p.QueueIfOffline, "Q"))
			if w := want[phase+" "+act.Verb]; got != w {
				t.Errorf("%s from %s: %q, want %q", act.Verb, phase, got, w)
			}
			if p.MintToken != act.Running {
				t.Errorf("%s from %s: mint token %v", act.Verb, phase, p.MintToken)
			}
			n++
		}
	}
	if n != len(Phases)*len(api.AgentActions) {
		t.Fatalf("%d pairs, want every phase by every action (%d)", n, len(Phases)*len(api.AgentActions))
	}
}

func yes(b bool, s string) string {
	if b {
		return s
	}
	return "-"
}

// TestActionsAreTheAPIs: the table's verbs are the API's, in its order.
func TestActionsAreTheAPIs(t *testing.T) {
	var verbs []string
	for _, a := range Actions {
		verbs = append(verbs, a.Verb)
	}
	if !slices.Equal(verbs, api.AgentActions) {
		t.Fatalf("table %v, api %v", verbs, api.AgentActions)
	}
}

// TestSlotsAndPhases: which phases hold a slot, and the phase each
// runtime state is recorded as.
func TestSlotsAndPhases(t *testing.T) {
	var holding []string
	for _, p := range Phases {
		if HoldsSlot(p) {
			holding = append(holding, p)
		}
	}
	if got := strings.Join(holding, ","); got != "provisioning,running,stopping" {
		t.Errorf("slot-holding phases %s", got)
	}
	if !KeepsSlot(api.PhaseStopped, api.ContainerStopQueued) || KeepsSlot(api.PhaseStopped, api.ContainerExited) {
		t.Error("a queued stop keeps the slot; a stopped agent does not")
	}
	for _, c := range []struct {
		state string
		run   bool
		want  string
	}{
		{api.ContainerRunning, false, api.PhaseRunning},
		{api.ContainerPaused, false, api.PhaseSuspended},
		{api.ContainerPending, false, api.PhaseProvisioning},
		{api.ContainerCreated, true, api.PhaseProvisioning},
		{api.ContainerCreated, false, api.PhaseCreated},
		{api.ContainerExited, true, api.PhaseStopped},
		{api.ContainerMissing, false, api.PhaseError},
		{"", false, api.PhaseCreated},
	} {
		if got := PhaseFor(c.state, c.run); got != c.want {
			t.Errorf("PhaseFor(%q, %v) = %s, want %s", c.state, c.run, got, c.want)
		}
	}
	for _, c := range []struct {
		phase, container string
		want             bool
	}{
		{api.PhaseError, "", true}, {api.PhaseError, api.ContainerMissing, true},
		{api.PhaseError, api.ContainerExited, false}, {api.PhaseStopped, "", false},
	} {
		if got := NoContainer(c.phase, c.container); got != c.want {
			t.Errorf("NoContainer(%s, %q) = %v", c.phase, c.container, got)
		}
	}
}

// TestQueuedStopKeepsItsSlot: the queue's record of a stop keeps the
// slot; the record of one that failed does not.
func TestQueuedStopKeepsItsSlot(t *testing.T) {
	if !KeepsSlot(QueuedStop.Phase, QueuedStop.Container) {
		t.Error("a queued stop gives up its slot")
	}
	if KeepsSlot(QueuedStopFailed.Phase, QueuedStopFailed.Container) {
		t.Error("a failed queued stop keeps a slot")
	}
}
