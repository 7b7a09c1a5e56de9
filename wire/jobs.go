package wire

import (
	"encoding/json"
	"time"

	"github.com/scion-go/scion/api"
)

// CapJobs: the broker runs delegated Jobs on spoke clusters (job.run,
// job.cancel; it sends job.update).
const CapJobs = "jobs"

// Delegated Jobs (ADR-0046), Hub to broker.
const (
	// MethodJobRun (JobRun -> JobAccepted): the broker resolves the
	// cluster from the agent's profile and its fleet file, fetches the
	// cluster's broker-scoped secrets, answers, and then submits and
	// follows the Job on its own, reporting with job.update. A refusal
	// (cluster_not_found, secret_not_found, invalid_request) means
	// nothing was submitted.
	MethodJobRun = "job.run"
	// MethodJobCancel (JobRef -> {}): delete the Job on its spoke; the
	// broker reports the cancelled state with job.update.
	MethodJobCancel = "job.cancel"
)

// Broker to Hub.
const (
	// MethodJobUpdate (JobUpdate -> {}): the latest state of a Job this
	// broker runs. The Hub refuses an update for a Job of another broker
	// and any change to a terminal Job. Updates are whole states, latest
	// wins: a broker that lost its connection sends the latest again.
	MethodJobUpdate = "job.update"
)

// JobRun is job.run's request.
type JobRun struct {
	// Job is the ledger row as the Hub wrote it (state pending; Cluster
	// as requested, "" for the profile's).
	Job api.Job `json:"job"`
	// Profile is the agent's broker profile ("" for none or a flat
	// instance): it names the fleet the agent may use.
	Profile string            `json:"profile,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// JobAccepted is job.run's answer: where the Job goes.
type JobAccepted struct {
	Cluster   string `json:"cluster"`
	Tier      string `json:"tier"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Queue is the Kueue queue the Job was labelled with: the run's own,
	// else the cluster block's default ("" none). The Hub keeps it in the
	// ledger row, which otherwise knows only the queue the caller named.
	// Brokers before it send none.
	Queue string `json:"queue,omitempty"`
}

// JobRef names a Job in job.cancel.
type JobRef struct {
	JobID string `json:"jobId"`
}

// JobUpdate is a Job's latest state as its broker sees it. Zero fields
// are "no news" except State, which is always set.
type JobUpdate struct {
	JobID      string          `json:"jobId"`
	State      api.JobState    `json:"state"`
	Message    string          `json:"message,omitempty"`
	StartedAt  *time.Time      `json:"startedAt,omitempty"`
	FinishedAt *time.Time      `json:"finishedAt,omitempty"`
	ExitCode   *int            `json:"exitCode,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *api.JobError   `json:"error,omitempty"`
	// Logs is the latest log snapshot (its last api.MaxJobLogBytes) when
	// it changed; nil keeps the Hub's.
	Logs *string `json:"logs,omitempty"`
	// Trace is the decoded trace (at most api.MaxJobTraceBytes), sent
	// once, with or before the terminal state.
	Trace []byte `json:"trace,omitempty"`
	// Where is where the Job went, as job.run's answer said: the Hub
	// fills its row from it when it never got that answer (lost with the
	// channel, or the Hub restarted meanwhile), so that the ledger still
	// names the cluster and tier. Brokers before it send none.
	Where *JobAccepted `json:"where,omitempty"`
}
