package jobs

import (
	"encoding/json"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
)

// Labels and annotations on every Job the runner submits.
const (
	LabelManagedBy = "scion.dev/managed-by" // always "scion"
	// LabelBroker is the submitting broker's ID: the sweep selects on it.
	LabelBroker = "scion.dev/broker-instance"
	LabelJobID  = "scion.dev/job-id"
	LabelAgent  = "scion.dev/agent"
	// LabelCluster is the spoke's name as the broker's fleet calls it.
	LabelCluster = "scion.dev/cluster"
	// LabelQueue is Kueue's queue label.
	LabelQueue = "kueue.x-k8s.io/queue-name"
)

// Sentinels the Job's program prints (docs/spokes.md):
//
//	::scion-result:: {"loss": 0.12}        (the last one wins)
//	::scion-trace-begin::
//	<base64 lines>
//	::scion-trace-end::
const (
	SentinelResult     = "::scion-result::"
	SentinelTraceBegin = "::scion-trace-begin::"
	SentinelTraceEnd   = "::scion-trace-end::"
)

// Spec is one Job to run.
type Spec struct {
	JobID    string
	AgentID  string
	BrokerID string
	Cluster  string
	Tier     string
	// Namespace on the spoke (never empty: the broker resolves it).
	Namespace string
	// Queue is the Kueue LocalQueue; "" submits suspended and admits it
	// right after (no Kueue on that spoke).
	Queue    string
	Image    string
	Command  []string
	Env      map[string]string
	GPUs     int
	Deadline time.Duration // activeDeadlineSeconds
	TTL      time.Duration // ttlSecondsAfterFinished; 0: DefaultTTL
	// RunAsUser and RunAsGroup are the pod's IDs (nil: DefaultRunAsUser);
	// RunAsUser 0 is root, which Pod Security "restricted" refuses (the
	// cluster block's explicit choice).
	RunAsUser, RunAsGroup *int64
}

// DefaultRunAsUser is the Job pods' user and group when the cluster block
// names none: a non-root ID with no meaning on the node, the one agent
// pods run as (runtime/kubernetes), so that a pod meets Pod Security
// "restricted" as it is.
const DefaultRunAsUser = 65532

// DefaultTTL keeps a finished Job an hour for inspection on the spoke.
const DefaultTTL = time.Hour

// Name is the Kubernetes Job's name for a Hub Job ID.
func Name(jobID string) string { return "scion-job-" + jobID }

// Clients reach one spoke.
type Clients struct {
	Kube kubernetes.Interface
	// Dynamic reads Kueue Workloads (nil: no Workload progress shown).
	Dynamic dynamic.Interface
}

// Progress is one report of a followed Job: its whole latest state.
type Progress struct {
	State     api.JobState
	Message   string
	StartedAt *time.Time
	// SeenRunningAt is when a poll first found the Job unsuspended
	// (running), kept until it is suspended again. It is never reported:
	// it stands in for StartedAt when the spoke's status.startTime was
	// never read (the Job controller sets it a moment after the Job is
	// created, and a cut right then leaves it unknown), so that a Job
	// given up is still bounded by its deadline.
	SeenRunningAt *time.Time
	FinishedAt    *time.Time
	ExitCode      *int
	Result        json.RawMessage
	Error         *api.JobError
	// Logs is set when the snapshot changed (its last api.MaxJobLogBytes).
	Logs *string
	// Trace is set once, with the terminal state, when there was one.
	Trace []byte
	// Unreachable is set on a Job given up because its status polls
	// failed for FollowOptions.RetryFor: it may still run on the spoke,
	// so its end is not yet known (see Settle).
	Unreachable bool
}

// FollowOptions tune Follow; zero values take the defaults.
type FollowOptions struct {
	PollInterval time.Duration // default 2 s
	// RetryFor is how long status polls may keep failing before the Job
	// is given up with a typed error (the deadline bounds it too).
	RetryFor time.Duration // default 5 min
	// Deadline bounds the whole follow; zero bounds a started Job by its
	// Spec.Deadline from its start plus DeadlineMargin (a queued Job by
	// nothing but ctx: admission may take long).
	Deadline time.Duration
	// Logger gets the follow's warnings, with "cluster" and "job"
	// attributes (nil: slog.Default()).
	Logger *slog.Logger
}
