package broker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
)

// Delegated Jobs (ADR-0046): the broker resolves a job.run's cluster from
// the agent's profile and its fleet, opens the spoke with broker-scoped
// Hub secrets, answers where the Job goes, then submits and follows it on
// its own, reporting job.update through an outbox that survives a lost
// control channel.

// JobsConfig is the broker's part in delegated Jobs. A nil Fleet means the
// broker runs no Jobs (and does not advertise wire.CapJobs).
type JobsConfig struct {
	// Fleet is the fleet file's clusters (clusters.toml beside the
	// settings, or --clusters); empty when there is no file.
	Fleet *fleet.Fleet
	// Profiles are the broker's profiles as configured: their jobs and
	// clusters sections pick and override the fleet. A flat instance has
	// none (the fleet file alone). Source names the settings file in
	// errors.
	Profiles []config.ProfileSettings
	Source   string
	// Ambient is the broker's own cluster (its Kubernetes runtime's
	// config) and namespace: the cluster of Jobs that name none. Nil: no
	// ambient cluster.
	Ambient          *rest.Config
	AmbientNamespace string
	// Secrets reads broker-scoped secrets (default: from the Hub with
	// the broker's credentials, wire.FetchBrokerSecret).
	Secrets connect.Secrets
	// Spokes opens spokes (default: a connect.Pool); Runner runs Jobs on
	// them (default: package spoke/jobs). Tests replace them.
	Spokes Spokes
	Runner JobRunner
	// FollowOptions tune the follow of every Job (zero: the runner's
	// defaults).
	FollowOptions jobs.FollowOptions
	// StartupTimeout bounds each cluster's sweep and resume (default 2m).
	StartupTimeout time.Duration
}

// Spokes opens a cluster's spoke; *connect.Pool is the real one.
type Spokes interface {
	Open(ctx context.Context, c *fleet.Cluster, secrets connect.Secrets) (*connect.Spoke, error)
	Ambient(cfg *rest.Config, namespace string) (*connect.Spoke, error)
	Close()
}

// JobRunner is package spoke/jobs as the broker uses it.
type JobRunner interface {
	Submit(ctx context.Context, c jobs.Clients, s jobs.Spec) error
	Follow(ctx context.Context, c jobs.Clients, s jobs.Spec, o jobs.FollowOptions, report func(jobs.Progress)) jobs.Progress
	// Cancel deletes the Job only if it is brokerID's (jobs.CancelOwn).
	Cancel(ctx context.Context, c jobs.Clients, namespace, jobID, brokerID string) error
	// Settle ends a Job given up while its spoke was unreachable
	// (jobs.Settle).
	Settle(ctx context.Context, c jobs.Clients, namespace, jobID, brokerID string) (jobs.Settled, error)
	// Sweep and Owned take only the Jobs labelled with cluster (the
	// block swept): two blocks may reach one namespace.
	Sweep(ctx context.Context, c jobs.Clients, namespace, brokerID, cluster string) ([]string, error)
	Owned(ctx context.Context, c jobs.Clients, namespace, brokerID, cluster string) ([]jobs.Spec, error)
}

// specRunner is the real runner: package spoke/jobs.
type specRunner struct{}

func (specRunner) Submit(ctx context.Context, c jobs.Clients, s jobs.Spec) error {
	return jobs.Submit(ctx, c, s)
}
func (specRunner) Follow(ctx context.Context, c jobs.Clients, s jobs.Spec, o jobs.FollowOptions, report func(jobs.Progress)) jobs.Progress {
	return jobs.Follow(ctx, c, s, o, report)
}
func (specRunner) Cancel(ctx context.Context, c jobs.Clients, ns, id, broker string) error {
	return jobs.CancelOwn(ctx, c, ns, id, broker)
}
func (specRunner) Settle(ctx context.Context, c jobs.Clients, ns, id, broker string) (jobs.Settled, error) {
	return jobs.Settle(ctx, c, ns, id, broker)
}
func (specRunner) Sweep(ctx context.Context, c jobs.Clients, ns, broker, cluster string) ([]string, error) {
	return jobs.Sweep(ctx, c, ns, broker, cluster)
}
func (specRunner) Owned(ctx context.Context, c jobs.Clients, ns, broker, cluster string) ([]jobs.Spec, error) {
	return jobs.Owned(ctx, c, ns, broker, cluster)
}

// followMargin is how long past a Job's deadline the broker keeps
// following it: the spoke's activeDeadlineSeconds ends the Job, and the
// margin lets its final state and logs be read.
const followMargin = 5 * time.Minute

// jobsState is a broker's delegated Jobs.
type jobsState struct {
	cfg      JobsConfig
	profiles map[string]*profileFleet
	base     *fleet.Fleet
	outbox   *jobOutbox
	// marks are the accepted Jobs not yet on their spoke; lost are those
	// a previous run left (read-only after newJobsState).
	marks acceptedMarks
	lost  map[string]acceptedMark

	mu      sync.Mutex
	running map[string]*runningJob // by Hub Job ID
	// swept is closed per cluster when its startup sweep is over: a Job
	// is submitted only after it, so that the sweep never takes a new
	// Job, still suspended, for a leftover.
	swept    map[string]chan struct{}
	stopping bool // set by stop: no goroutine starts after it
	wg       sync.WaitGroup
}

// goJob runs f on a goroutine that stop waits for, unless the broker is
// stopping (a job.run answered while Run returns).
func (js *jobsState) goJob(f func()) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.stopping {
		return false
	}
	js.wg.Go(f)
	return true
}

// stop waits for every Job goroutine (their context has ended).
func (js *jobsState) stop() {
	js.mu.Lock()
	js.stopping = true
	js.mu.Unlock()
	js.wg.Wait()
}

// profileFleet is a profile's settings and the fleet it sees.
type profileFleet struct {
	settings config.ProfileSettings
	fleet    *fleet.Fleet
}

// runningJob is a Job this broker follows.
type runningJob struct {
	spec  jobs.Spec
	spoke *connect.Spoke
	// ctx bounds the Job's follow (deadline and margin, the broker's
	// run); done is closed when its goroutine has returned.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// ended is set once a terminal update is queued: nothing after it
	// is reported. cancelling is set by job.cancel, which reports the
	// end itself.
	ended, cancelling bool
}

// newJobsState checks the fleet against every profile: a profile block
// that does not validate, or a jobs.cluster the profile's fleet lacks,
// fails the broker's start with the file, cluster and field.
func newJobsState(cfg JobsConfig, dataDir string, log *slog.Logger) (*jobsState, error) {
	if cfg.Fleet == nil {
		return nil, nil
	}
	if cfg.Spokes == nil {
		cfg.Spokes = connect.NewPool(fleet.Options{}, log)
	}
	if cfg.Runner == nil {
		cfg.Runner = specRunner{}
	}
	cfg.StartupTimeout = cmp.Or(cfg.StartupTimeout, 2*time.Minute)
	if cfg.Fleet.Clusters == nil {
		cfg.Fleet.Clusters = map[string]*fleet.Cluster{}
	}
	s := &jobsState{cfg: cfg, base: cfg.Fleet, profiles: map[string]*profileFleet{},
		running: map[string]*runningJob{}, swept: map[string]chan struct{}{}, outbox: newJobOutbox(filepath.Join(dataDir, "jobs", "outbox"), log),
		marks: acceptedMarks{dir: filepath.Join(dataDir, "jobs", "accepted"), log: log}}
	s.lost = s.marks.load()
	for _, p := range cfg.Profiles {
		f, err := cfg.Fleet.ForProfile(p, cmp.Or(cfg.Source, "settings"))
		if err != nil {
			return nil, err
		}
		if _, err := f.Target(p); err != nil {
			return nil, fmt.Errorf("%s: %w", cmp.Or(cfg.Source, "settings"), err)
		}
		s.profiles[p.Name] = &profileFleet{settings: p, fleet: f}
	}
	return s, nil
}

func (js *jobsState) get(id string) *runningJob {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.running[id]
}

// add records a Job to follow; fresh is false when it was already there.
func (js *jobsState) add(parent context.Context, spec jobs.Spec, sp *connect.Spoke) (rj *runningJob, fresh bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if rj := js.running[spec.JobID]; rj != nil {
		return rj, false
	}
	// No timeout here: a queued Job may wait for admission as long as its
	// queue makes it (the user can cancel it), and the runner bounds a
	// started one by its start, its deadline and a margin.
	ctx, cancel := context.WithCancel(parent)
	rj = &runningJob{spec: spec, spoke: sp, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	js.running[spec.JobID] = rj
	return rj, true
}

func (js *jobsState) remove(rj *runningJob) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.running[rj.spec.JobID] == rj {
		delete(js.running, rj.spec.JobID)
	}
	rj.cancel()
}

func (js *jobsState) isCancelling(rj *runningJob) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	return rj.cancelling
}

// sweptCh is the channel closed when cluster's startup sweep is over.
func (js *jobsState) sweptCh(cluster string) chan struct{} {
	js.mu.Lock()
	defer js.mu.Unlock()
	ch := js.swept[cluster]
	if ch == nil {
		ch = make(chan struct{})
		js.swept[cluster] = ch
	}
	return ch
}
