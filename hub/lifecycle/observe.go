package lifecycle

import "github.com/scion-go/scion/api"

// Note is what an observation does to the agent's status message.
type Note int

const (
	// NoteKeep leaves the message as it is.
	NoteKeep Note = iota
	// NoteClear empties it: what it told is over.
	NoteClear
	// NoteWaiting: the runtime's reason why a started container does not
	// run yet (a pod no node takes, an image that does not pull).
	NoteWaiting
	// NoteExitCode: the agent exited with a non-zero code (and the
	// runtime's account of it).
	NoteExitCode
	// NoteGone: the container of a live agent is no longer on the broker.
	NoteGone
	// NoteInterrupted: a create was interrupted before the broker
	// confirmed it, and nothing of it is there.
	NoteInterrupted
)

// Observed is what a broker's report of an agent's container leads to.
type Observed struct {
	// StopQueued: a stop is queued for the agent and the container is
	// still live: the stop decides what happens next, and only the ports
	// are taken from the report.
	StopQueued bool
	// Phase is the phase to record ("" keeps it).
	Phase string
	Note  Note
}

// Observe is the table of reports: what an agent in phase, with container
// status container, becomes when its broker reports its container in
// state (exitCode: its exit code when it exited).
func Observe(phase, container, state string, exitCode *int) Observed {
	live := state == api.ContainerRunning || state == api.ContainerPaused || state == api.ContainerPending
	var o Observed
	if container == api.ContainerStopQueued {
		if live {
			return Observed{StopQueued: true}
		}
		o.Note = NoteClear // stopped or gone before the stop arrived: the stop is moot
	}
	switch state {
	case api.ContainerRunning:
		o.Phase = api.PhaseRunning
		if container == api.ContainerPending {
			o.Note = NoteClear // what it waited for is over
		}
	case api.ContainerPending:
		// Started but not running: never running, and the reason is the
		// message.
		if phase == api.PhaseRunning || phase == api.PhaseProvisioning {
			o.Phase, o.Note = api.PhaseProvisioning, NoteWaiting
		}
	case api.ContainerPaused:
		o.Phase = api.PhaseSuspended
	case api.ContainerCreated:
		if phase == api.PhaseProvisioning || phase == api.PhaseRunning {
			o.Phase = api.PhaseCreated // provisioned but not (or no longer) started
		}
	case api.ContainerExited:
		switch phase {
		case api.PhaseStopping: // asked for: any exit code is a stop
			o.Phase = api.PhaseStopped
		case api.PhaseRunning, api.PhaseProvisioning:
			o.Phase = api.PhaseStopped
			if exitCode != nil && *exitCode != 0 {
				o.Phase, o.Note = api.PhaseError, NoteExitCode
			}
		}
	case api.ContainerMissing:
		switch phase {
		case api.PhaseRunning, api.PhaseSuspended, api.PhaseStopping:
			o.Phase, o.Note = api.PhaseStopped, NoteGone
		case api.PhaseProvisioning:
			o.Phase, o.Note = api.PhaseError, NoteInterrupted
		}
	}
	return o
}

// StartedMeanwhile reports whether an agent whose start just succeeded,
// found in phase with container status container, was reported pending
// while its record said it was not started. The report of a start's new
// container (a Kubernetes pod waiting for a node) can reach the Hub
// before the start's own answer; Observe judges it on the stopped record
// and leaves the phase alone (a report alone never revives a stopped
// agent), and the start's answer, the older news, is not applied either:
// the start then records the phase the report calls for.
func StartedMeanwhile(phase, container string) bool {
	return container == api.ContainerPending &&
		(phase == api.PhaseStopped || phase == api.PhaseCreated || phase == api.PhaseError)
}
