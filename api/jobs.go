package api

import (
	"encoding/json"
	"time"
)

// Delegated Jobs (ADR-0046): an agent's work that runs as a Kubernetes
// Job on a remote cluster (a "spoke") its broker reaches with credentials
// only the broker holds. The Hub keeps the ledger; the broker runs the Job
// and reports.
//
//	POST   /api/v1/agents/{agent}/jobs            JobRunRequest -> Job (201)
//	GET    /api/v1/agents/{agent}/jobs?cursor=&limit= -> List[Job]
//	GET    /api/v1/jobs?project=&agent=&cursor=&limit= -> List[Job] (the caller's reachable ones)
//	GET    /api/v1/jobs/{job}                     -> Job
//	GET    /api/v1/jobs/{job}/logs                -> text/plain (the latest log snapshot)
//	GET    /api/v1/jobs/{job}/trace               -> application/octet-stream (the decoded trace; 404 when none)
//	POST   /api/v1/jobs/{job}/cancel              -> Job (200; 202 with state cancelling when the cancel is queued)
//
// Every Job route needs agent.lifecycle on the Job's agent: an agent for
// itself, a user or agent allowed to act on it.

// JobState is where a Job is.
type JobState string

const (
	// JobStatePending: the Hub has asked the broker; nothing is on a spoke yet.
	JobStatePending JobState = "pending"
	// JobStateQueued: submitted suspended, waiting for admission (Kueue).
	JobStateQueued JobState = "queued"
	// JobStateRunning: admitted; its pod runs (or is being scheduled).
	JobStateRunning   JobState = "running"
	JobStateSucceeded JobState = "succeeded"
	JobStateFailed    JobState = "failed"
	JobStateCancelled JobState = "cancelled"
	// JobStateCancelling: a cancel its broker has not confirmed yet (it
	// was offline, or did not answer in time): the cancel is queued and
	// delivered when the broker reconnects. Not final: the broker's
	// cancelled report ends it, a succeeded or failed one records what
	// happened first, and deregistering the broker ends it cancelled.
	JobStateCancelling JobState = "cancelling"
	// JobStateError: the broker could not run or follow it (an unreachable
	// spoke, credentials refused); Job.Error says why.
	JobStateError JobState = "error"
)

// Terminal reports whether s is final: a Job in it never changes again.
func (s JobState) Terminal() bool {
	switch s {
	case JobStateSucceeded, JobStateFailed, JobStateCancelled, JobStateError:
		return true
	}
	return false
}

// Bounds of a JobRunRequest.
const (
	MaxJobCommandArgs   = 256
	MaxJobCommandBytes  = 64 << 10
	MaxJobGPUs          = 64
	MaxJobDeadline      = 7 * 24 * time.Hour
	DefaultJobDeadline  = 2 * time.Hour
	MaxJobLogBytes      = 256 << 10 // the log snapshot the Hub keeps (its tail)
	MaxJobResultBytes   = 64 << 10  // a sentinel result's JSON
	MaxJobTraceBytes    = 4 << 20   // a decoded trace
	MaxJobEnv           = 64
	MaxJobEnvValueBytes = 8 << 10
)

// JobRunRequest asks for a Job for an agent. Cluster empty means the
// cluster of the agent's profile (its jobs.cluster), else the broker's
// own ambient cluster.
type JobRunRequest struct {
	Cluster string   `json:"cluster,omitempty"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	GPUs    int      `json:"gpus,omitempty"`
	// Queue is the Kueue LocalQueue; empty means the cluster block's.
	Queue string `json:"queue,omitempty"`
	// DeadlineSeconds becomes activeDeadlineSeconds; 0 means
	// DefaultJobDeadline.
	DeadlineSeconds int64 `json:"deadlineSeconds,omitempty"`
	// Env is plain environment for the Job's container (never secrets:
	// a Job on a spoke gets no Hub secret).
	Env map[string]string `json:"env,omitempty"`
}

// JobError is the typed error of a Job the broker could not run or
// follow: {"status":"error","cluster":"b200","tier":"bastion","message":"..."}.
type JobError struct {
	Status  string `json:"status"` // always "error"
	Cluster string `json:"cluster"`
	Tier    string `json:"tier"`
	Message string `json:"message"`
}

// Job is one ledger row.
type Job struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	AgentID   string `json:"agentId"`
	BrokerID  string `json:"runtimeBrokerId"`
	// Cluster is the spoke's name ("" never: the ambient cluster is
	// "ambient"); Tier how the broker reaches it (public, host_aliases,
	// proxy, bastion, ambient).
	Cluster   string `json:"cluster"`
	Tier      string `json:"tier,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Name is the Kubernetes Job's name on the spoke.
	Name            string   `json:"name,omitempty"`
	Image           string   `json:"image"`
	Command         []string `json:"command"`
	GPUs            int      `json:"gpus,omitempty"`
	Queue           string   `json:"queue,omitempty"`
	DeadlineSeconds int64    `json:"deadlineSeconds"`
	State           JobState `json:"state"`
	// Message is the latest progress line ("waiting for admission in
	// queue h200", "pod running", ...).
	Message    string     `json:"message,omitempty"`
	CreatedBy  string     `json:"createdBy"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	ExitCode   *int       `json:"exitCode,omitempty"`
	// Result is the JSON of the Job's sentinel result line, if it printed
	// one.
	Result json.RawMessage `json:"result,omitempty"`
	Error  *JobError       `json:"error,omitempty"`
	// LogBytes and TraceBytes are the sizes of the kept log snapshot and
	// decoded trace (0: none).
	LogBytes   int `json:"logBytes"`
	TraceBytes int `json:"traceBytes"`
}

// BrokerSecret is a broker-scoped secret's metadata: its value is
// delivered to that broker only (for spoke kubeconfigs and bastion keys),
// never to an agent, never in an answer.
//
//	PUT    /api/v1/runtime-brokers/{broker}/secrets/{name}   PutSecretRequest -> BrokerSecret (admin)
//	GET    /api/v1/runtime-brokers/{broker}/secrets          -> List[BrokerSecret] (admin; names only)
//	DELETE /api/v1/runtime-brokers/{broker}/secrets/{name}   (204; admin)
//	GET    /api/v1/runtime-brokers/{broker}/secrets/{name}/value -> BrokerSecretValue (signed broker headers of that broker only)
type BrokerSecret struct {
	BrokerID  string    `json:"runtimeBrokerId"`
	Name      string    `json:"name"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// BrokerSecretValue is the one answer that carries a value: to the
// broker the secret is scoped to, over its signed request.
type BrokerSecretValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}
