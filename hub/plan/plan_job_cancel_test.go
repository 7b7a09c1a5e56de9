package plan

import (
	"errors"
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// TestPlanJobCancel: every state a Job's row takes, with its broker
// registered or not: the cancel's first step, or its refusal.
func TestPlanJobCancel(t *testing.T) {
	for _, c := range []struct {
		state   api.JobState
		named   bool // the broker answered the run (the row has the Job's name)
		missing bool
		want    JobCancelStep
		status  int
	}{
		{api.JobStateCancelled, true, false, CancelAnswerAsIs, 0},
		{api.JobStateCancelled, true, true, CancelAnswerAsIs, 0},
		{api.JobStatePending, false, false, CancelEndPending, 0},
		{api.JobStatePending, false, true, CancelEndPending, 0},
		{api.JobStatePending, true, false, CancelSend, 0},
		{api.JobStatePending, true, true, CancelEndInLedger, 0},
		{api.JobStateRunning, true, false, CancelSend, 0},
		{api.JobStateRunning, true, true, CancelEndInLedger, 0},
		{api.JobStateCancelling, true, false, CancelSend, 0},
		{api.JobStateSucceeded, true, false, 0, http.StatusConflict},
		{api.JobStateFailed, true, true, 0, http.StatusConflict},
		{api.JobStateError, false, false, 0, http.StatusConflict},
	} {
		j := &store.Job{ID: "j1", State: c.state}
		if c.named {
			j.Name = "scion-j1"
		}
		got, err := JobCancel(j, c.missing)
		switch {
		case c.status != 0:
			if e := api.AsError(err); err == nil || e.Status != c.status || e.Code != api.CodeInvalidPhase {
				t.Errorf("%s (named %v, missing %v): %v, want %d invalid_phase", c.state, c.named, c.missing, err, c.status)
			}
		case err != nil || got != c.want:
			t.Errorf("%s (named %v, missing %v): step %d %v, want %d", c.state, c.named, c.missing, got, err, c.want)
		}
	}
}

// TestPlanJobCancelOutcome: a sent cancel's answer.
func TestPlanJobCancelOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want jobCancelOutcome
	}{
		{nil, cancelConfirmed},
		{api.Errorf(api.CodeJobNotFound, "no such job"), CancelUnfollowed},
		{api.Errorf(api.CodeBrokerTimeout, "late"), CancelQueue},
		{api.Errorf(api.CodeBrokerOffline, "gone"), CancelQueue},
		{errors.New("context deadline exceeded"), CancelQueue},
		{api.Errorf(api.CodeForbidden, "no"), CancelFailed},
	} {
		if got := JobCancelOutcome(c.err); got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
}
