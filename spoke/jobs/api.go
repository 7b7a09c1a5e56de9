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
}

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
	State      api.JobState
	Message    string
	StartedAt  *time.Time
	FinishedAt *time.Time
	ExitCode   *int
	Result     json.RawMessage
	Error      *api.JobError
	// Logs is set when the snapshot changed (its last api.MaxJobLogBytes).
	Logs *string
	// Trace is set once, with the terminal state, when there was one.
	Trace []byte
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
