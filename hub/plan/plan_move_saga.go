package plan

import "github.com/scion-go/scion/api"

// What a move's saga does when a step fails, or when the Hub finds it cut
// short at a start (multi-broker spec, "What happens during a move" and
// "Operator notes and limits"). The saga runs these steps in order,
// persisting each as done (api.MoveStep*): re-run the checks and stop the
// agent on the source (stopped); move its quota, assign it to the target
// and link the target, in one transaction (assigned); provision on the
// target (provisioned); start the new generation (started); ask the
// source to remove its local copy (cleaned).

// MoveLanding is where a failed or cut-short move leaves the agent.
type MoveLanding struct {
	// Rollback: the agent was assigned to the target; remove its state
	// there (best effort) and put it back on the source, stopped, with
	// its configuration as it was before the move.
	Rollback bool
	// OnTarget: the agent stays assigned to the target (a start whose
	// outcome is not known, or a move cut short after the assignment).
	OnTarget bool
	// Resume: only the source's cleanup was left; run it.
	Resume bool
	// Outcome and SourceCleanup are the move record's.
	Outcome       string
	SourceCleanup string
}

// MoveStepFailed is the landing of a move whose step after done failed.
// unknown: the failing command's outcome is not known (no answer: the
// broker went away or the deadline passed), so it may have acted.
func MoveStepFailed(done string, unknown bool) MoveLanding {
	failed := MoveLanding{Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}
	switch done {
	case api.MoveStepAccepted, api.MoveStepStopped:
		// The checks, the stop or the assignment (the target's quota)
		// failed: nothing moved; the agent stays on the source.
		return failed
	case api.MoveStepAssigned:
		// The provision: a create the target refused left nothing there,
		// and one it did not answer is removed with the rest.
		failed.Rollback = true
		return failed
	case api.MoveStepProvisioned:
		if unknown {
			// The start may have left a container: the agent stays on
			// the target, and the source is not cleaned up.
			return MoveLanding{OnTarget: true, Outcome: api.MoveFailed, SourceCleanup: api.CleanupAmbiguousStart}
		}
		failed.Rollback = true
		return failed
	}
	// The new generation runs: only the cleanup is left, and a move
	// counts as completed whatever its outcome.
	return MoveLanding{Outcome: api.MoveCompleted}
}

// MoveInterrupted is the landing of a move a Hub start finds running,
// its last step done: cut short before the new generation ran, it ends
// where the agent is assigned (the quota follows the agent's record),
// the source left alone; with only the cleanup left, the cleanup is
// resumed.
func MoveInterrupted(done string) MoveLanding {
	switch done {
	case api.MoveStepStarted, api.MoveStepCleaned:
		return MoveLanding{Resume: true, Outcome: api.MoveCompleted}
	case api.MoveStepAssigned, api.MoveStepProvisioned:
		return MoveLanding{OnTarget: true, Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}
	}
	return MoveLanding{Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}
}

// MoveCleanupOutcome is the record's sourceCleanup for the source's
// answer to its cleanup (err nil: done), or for an agent that had no run
// ID there (an older version started it: the source could only find it
// by name, and on a namespace both brokers share that could be the new
// pod, so it is left alone).
func MoveCleanupOutcome(sourceRunID string, err error) string {
	switch {
	case sourceRunID == "":
		return api.CleanupNoRunID
	case err != nil:
		return api.CleanupFailedPrefix + api.AsError(err).Message
	}
	return api.CleanupDone
}
