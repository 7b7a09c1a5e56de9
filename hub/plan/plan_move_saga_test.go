package plan

import (
	"errors"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestMoveStepFailed(t *testing.T) {
	onSource := MoveLanding{Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}
	rollback := MoveLanding{Rollback: true, Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}
	for _, c := range []struct {
		name    string
		done    string
		unknown bool
		want    MoveLanding
	}{
		{"checks or stop fail: nothing moved", api.MoveStepAccepted, false, onSource},
		{"a stop unanswered: still the source's", api.MoveStepAccepted, true, onSource},
		{"target quota: stopped on the source", api.MoveStepStopped, false, onSource},
		{"provision refused: rollback", api.MoveStepAssigned, false, rollback},
		{"provision unanswered: rollback removes it", api.MoveStepAssigned, true, rollback},
		{"start refused, no container: rollback", api.MoveStepProvisioned, false, rollback},
		{"start unanswered: stays on the target", api.MoveStepProvisioned, true,
			MoveLanding{OnTarget: true, Outcome: api.MoveFailed, SourceCleanup: api.CleanupAmbiguousStart}},
		{"cleanup fails: the move completed", api.MoveStepStarted, false, MoveLanding{Outcome: api.MoveCompleted}},
	} {
		if got := MoveStepFailed(c.done, c.unknown); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestMoveInterrupted(t *testing.T) {
	for _, c := range []struct {
		done string
		want MoveLanding
	}{
		{api.MoveStepAccepted, MoveLanding{Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}},
		{api.MoveStepStopped, MoveLanding{Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}},
		{api.MoveStepAssigned, MoveLanding{OnTarget: true, Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}},
		{api.MoveStepProvisioned, MoveLanding{OnTarget: true, Outcome: api.MoveFailed, SourceCleanup: api.CleanupInterrupted}},
		{api.MoveStepStarted, MoveLanding{Resume: true, Outcome: api.MoveCompleted}},
	} {
		if got := MoveInterrupted(c.done); got != c.want {
			t.Errorf("cut short after %s: %+v, want %+v", c.done, got, c.want)
		}
	}
}

func TestMoveCleanupOutcome(t *testing.T) {
	for _, c := range []struct {
		run  string
		err  error
		want string
	}{
		{"r1", nil, api.CleanupDone},
		{"", nil, api.CleanupNoRunID},
		{"", errors.New("x"), api.CleanupNoRunID},
		{"r1", api.Errorf(api.CodeRuntimeError, "engine gone"), "failed:engine gone"},
	} {
		if got := MoveCleanupOutcome(c.run, c.err); got != c.want {
			t.Errorf("run %q err %v: %q, want %q", c.run, c.err, got, c.want)
		}
	}
}
