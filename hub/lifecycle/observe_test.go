package lifecycle

import (
	"testing"

	"github.com/scion-go/scion/api"
)

// TestObserveTable lists every (phase, reported state) pair: the phase
// recorded ("=" kept) and the message's note, for a container with no
// stop queued (and a clean exit; TestObserveExits has the codes).
func TestObserveTable(t *testing.T) {
	states := []string{api.ContainerRunning, api.ContainerPending, api.ContainerPaused, api.ContainerCreated,
		api.ContainerExited, api.ContainerMissing}
	notes := map[Note]string{NoteKeep: "", NoteClear: " clear", NoteWaiting: " waiting", NoteExitCode: " exit-code",
		NoteGone: " gone", NoteInterrupted: " interrupted"}
	want := map[string]string{}
	for _, p := range Phases {
		want[p+" running"] = "running"
		want[p+" pending"] = "="
		want[p+" paused"] = "suspended"
		want[p+" created"] = "="
		want[p+" exited"] = "="
		want[p+" missing"] = "="
	}
	for _, p := range []string{api.PhaseRunning, api.PhaseProvisioning} {
		want[p+" pending"] = "provisioning waiting"
		want[p+" created"] = "created"
		want[p+" exited"] = "stopped"
	}
	want[api.PhaseStopping+" exited"] = "stopped"
	for _, p := range []string{api.PhaseRunning, api.PhaseSuspended, api.PhaseStopping} {
		want[p+" missing"] = "stopped gone"
	}
	want[api.PhaseProvisioning+" missing"] = "error interrupted"
	n := 0
	for _, p := range Phases {
		for _, st := range states {
			o := Observe(p, api.ContainerNone, st, nil)
			got := o.Phase
			if got == "" {
				got = "="
			}
			got += notes[o.Note]
			if w := want[p+" "+st]; got != w || o.StopQueued {
				t.Errorf("%s reported %s: %q (stop queued %v), want %q", p, st, got, o.StopQueued, w)
			}
			n++
		}
	}
	if n != len(Phases)*len(states) {
		t.Fatalf("%d pairs", n)
	}
}

// TestObserveExits: a non-zero exit of a running agent is an error with
// its code; of one being stopped, a stop. A pending container that runs
// clears its reason.
func TestObserveExits(t *testing.T) {
	one, zero := 1, 0
	for _, c := range []struct {
		phase string
		code  *int
		want  Observed
	}{
		{api.PhaseRunning, &one, Observed{Phase: api.PhaseError, Note: NoteExitCode}},
		{api.PhaseProvisioning, &one, Observed{Phase: api.PhaseError, Note: NoteExitCode}},
		{api.PhaseRunning, &zero, Observed{Phase: api.PhaseStopped}},
		{api.PhaseStopping, &one, Observed{Phase: api.PhaseStopped}},
	} {
		if got := Observe(c.phase, api.ContainerRunning, api.ContainerExited, c.code); got != c.want {
			t.Errorf("%s exited %d: %+v, want %+v", c.phase, *c.code, got, c.want)
		}
	}
	if got := Observe(api.PhaseProvisioning, api.ContainerPending, api.ContainerRunning, nil); got != (Observed{Phase: api.PhaseRunning, Note: NoteClear}) {
		t.Errorf("pending then running: %+v", got)
	}
}

// TestObserveQueuedStop: while a stop is queued, a live container keeps
// everything but its ports; one stopped or gone makes the stop moot.
func TestObserveQueuedStop(t *testing.T) {
	for _, st := range []string{api.ContainerRunning, api.ContainerPaused, api.ContainerPending} {
		if got := Observe(api.PhaseRunning, api.ContainerStopQueued, st, nil); got != (Observed{StopQueued: true}) {
			t.Errorf("queued stop, %s: %+v", st, got)
		}
	}
	if got := Observe(api.PhaseRunning, api.ContainerStopQueued, api.ContainerExited, nil); got != (Observed{Phase: api.PhaseStopped, Note: NoteClear}) {
		t.Errorf("queued stop, exited: %+v", got)
	}
}

// TestStartedMeanwhile: only a pending container on a record that says
// the agent is not started is a start's report that overtook its answer.
func TestStartedMeanwhile(t *testing.T) {
	for _, p := range Phases {
		for _, c := range []string{api.ContainerPending, api.ContainerRunning, api.ContainerExited, api.ContainerMissing} {
			want := c == api.ContainerPending && (p == api.PhaseStopped || p == api.PhaseCreated || p == api.PhaseError)
			if got := StartedMeanwhile(p, c); got != want {
				t.Errorf("StartedMeanwhile(%s, %s) = %v, want %v", p, c, got, want)
			}
		}
	}
}
