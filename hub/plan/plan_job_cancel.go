// The plan of POST /jobs/{job}/cancel: what a cancel does, as pure
// functions of the Job's row and its broker (see plan.go).

package plan

import (
	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// JobCancelStep is what a cancel of a Job does first.
type JobCancelStep int

const (
	// CancelAnswerAsIs: the Job is cancelled already (a retried cancel).
	CancelAnswerAsIs JobCancelStep = iota
	// CancelEndPending: the broker has not answered the run (it may still
	// be fetching the cluster's secrets): a job.cancel now would find
	// nothing to cancel and the run would go on, so the ledger ends it
	// (hub/jobs: the run's handler cancels it on its spoke if the broker
	// then accepts it, ApplyUpdate if it reports it alive later).
	CancelEndPending
	// CancelEndInLedger: its broker is deregistered: nobody can reach the
	// Job any more, and the ledger must not keep it live for ever.
	CancelEndInLedger
	// CancelSend: the broker is asked (queued if it is offline).
	CancelSend
)

// JobCancel decides the first step of a cancel of j, whose broker
// is no longer registered when BrokerMissing. A Job that finished
// otherwise than cancelled is 409 invalid_phase.
func JobCancel(j *store.Job, BrokerMissing bool) (JobCancelStep, error) {
	switch {
	case j.State == api.JobStateCancelled:
		return CancelAnswerAsIs, nil
	case j.State == api.JobStatePending && j.Name == "":
		return CancelEndPending, nil
	case j.State.Terminal():
		return 0, api.Conflict(api.CodeInvalidPhase, "job %s already finished (%s); there is nothing to cancel", j.ID, j.State)
	case BrokerMissing:
		return CancelEndInLedger, nil
	}
	return CancelSend, nil
}

// jobCancelOutcome is what a sent cancel's answer leaves.
type jobCancelOutcome int

const (
	// cancelConfirmed: the broker cancelled it and reported so.
	cancelConfirmed jobCancelOutcome = iota
	// CancelUnfollowed: the broker follows no such Job (it lost it, killed
	// before the submit): nothing is left to stop; the ledger ends it.
	CancelUnfollowed
	// CancelQueue: no answer; the broker may have cancelled it or not. It
	// is queued, sent again (with the same effect) when the broker says
	// hello again, and redelivered on this session meanwhile.
	CancelQueue
	// CancelFailed: the broker refused it; the error is the answer.
	CancelFailed
)

// JobCancelOutcome reads the answer to a sent job.cancel.
func JobCancelOutcome(err error) jobCancelOutcome {
	switch {
	case err == nil:
		return cancelConfirmed
	case api.AsError(err).Code == api.CodeJobNotFound:
		return CancelUnfollowed
	case AnswerLost(err):
		return CancelQueue
	}
	return CancelFailed
}
