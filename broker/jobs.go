package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"
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
	Sweep(ctx context.Context, c jobs.Clients, namespace, brokerID string) ([]string, error)
	Owned(ctx context.Context, c jobs.Clients, namespace, brokerID string) ([]jobs.Spec, error)
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
func (specRunner) Sweep(ctx context.Context, c jobs.Clients, ns, broker string) ([]string, error) {
	return jobs.Sweep(ctx, c, ns, broker)
}
func (specRunner) Owned(ctx context.Context, c jobs.Clients, ns, broker string) ([]jobs.Spec, error) {
	return jobs.Owned(ctx, c, ns, broker)
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

// target is where a job.run goes: a fleet cluster, or the ambient one.
type target struct {
	cluster *fleet.Cluster // nil: ambient
}

// resolveCluster picks a Job's cluster: the one it names, else its
// profile's jobs.cluster, else the ambient cluster when the broker has
// one. A cluster the profile's fleet does not offer is refused exactly
// like one that exists nowhere (cluster_not_found, one message shape):
// an agent learns nothing about other profiles' spokes.
func resolveCluster(f *fleet.Fleet, requested, profileCluster string, hasAmbient bool, brokerID string) (target, error) {
	name := cmp.Or(requested, profileCluster)
	if name == "" {
		if hasAmbient {
			return target{}, nil
		}
		return target{}, api.NotFound(api.CodeClusterNotFound, "no cluster named and runtime broker %s has no ambient cluster (offered: %s)", brokerID, offered(f, hasAmbient))
	}
	if c, ok := f.Clusters[name]; ok {
		return target{cluster: c}, nil
	}
	if name == connect.AmbientCluster && hasAmbient {
		return target{}, nil
	}
	return target{}, api.NotFound(api.CodeClusterNotFound, "cluster %q is not offered to this agent by runtime broker %s (offered: %s)", name, brokerID, offered(f, hasAmbient))
}

func offered(f *fleet.Fleet, hasAmbient bool) string {
	names := f.Names()
	if hasAmbient && f.Clusters[connect.AmbientCluster] == nil {
		names = append(names, connect.AmbientCluster)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// secrets reads broker-scoped Hub secrets with the broker's credentials.
func (b *Broker) secrets(ctx context.Context, name string) (string, error) {
	if f := b.jobs.cfg.Secrets; f != nil {
		return f(ctx, name)
	}
	hc := b.cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return wire.FetchBrokerSecret(ctx, hc, b.cfg.HubEndpoint, b.cfg.BrokerID, b.cfg.Secret, name)
}

// jobLog is the logger of one Job's lines.
func (b *Broker) jobLog(cluster, jobID string) *slog.Logger {
	return b.log.With("cluster", cluster, "job", jobID)
}

// handleJobRun answers job.run: the refusals mean nothing was submitted.
func (b *Broker) handleJobRun(ctx context.Context, req *wire.Request) (any, error) {
	js := b.jobs
	var run wire.JobRun
	if err := req.Decode(&run); err != nil {
		return nil, api.BadRequest("%s: %v", req.Method, err)
	}
	j := run.Job
	if err := validID("job ID", j.ID); err != nil {
		return nil, err
	}
	if err := validID("agent ID", j.AgentID); err != nil {
		return nil, err
	}
	if j.Image == "" || len(j.Command) == 0 {
		return nil, api.BadRequest("%s: job %s: image and command are required", req.Method, j.ID)
	}
	if j.DeadlineSeconds < 0 || time.Duration(j.DeadlineSeconds)*time.Second > api.MaxJobDeadline {
		return nil, api.BadRequest("%s: job %s: deadlineSeconds %d is out of range", req.Method, j.ID, j.DeadlineSeconds)
	}
	// A retried job.run (the Hub lost the answer) is answered again,
	// not run twice.
	if rj := js.get(j.ID); rj != nil {
		return accepted(rj.spec), nil
	}
	st, err := b.rt.Inspect(ctx, j.AgentID)
	if err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return nil, api.NotFound(api.CodeAgentNotFound, "agent %s is not run by runtime broker %s", j.AgentID, b.cfg.BrokerID)
		}
		return nil, b.opError(req.Method, j.AgentID, err)
	}
	// The profile whose fleet the Job may use is the agent's own, as the
	// broker labelled it at create: a job.run naming another (a forged or
	// wrong Hub) must not reach that profile's spokes. A runtime that
	// reports no labels leaves the Hub's word.
	if st.Labels != nil && st.Labels[runtime.LabelProfile] != run.Profile {
		return nil, api.BadRequest("%s: profile %q is not the profile of agent %s on runtime broker %s", req.Method, run.Profile, j.AgentID, b.cfg.BrokerID)
	}
	f, profileCluster := js.base, ""
	if run.Profile != "" {
		pf, ok := js.profiles[run.Profile]
		if !ok {
			return nil, api.BadRequest("profile %q is not a profile of runtime broker %s", run.Profile, b.cfg.BrokerID)
		}
		f = pf.fleet
		if pf.settings.Jobs != nil {
			profileCluster = pf.settings.Jobs.Cluster
		}
	}
	tg, err := resolveCluster(f, j.Cluster, profileCluster, js.cfg.Ambient != nil, b.cfg.BrokerID)
	if err != nil {
		return nil, err
	}
	sp, err := b.openSpoke(ctx, tg.cluster)
	if err != nil {
		return nil, err
	}
	spec := specFor(run, sp, b.cfg.BrokerID)
	rj, fresh := js.add(b.runCtx, spec, sp)
	if fresh {
		b.jobLog(spec.Cluster, spec.JobID).Info("job accepted", "tier", spec.Tier, "namespace", spec.Namespace, "agent", spec.AgentID)
		js.marks.mark(spec.Cluster, spec.Tier, spec.Namespace, spec.JobID)
		if !js.goJob(func() { b.runJob(rj, true) }) {
			js.remove(rj)
			js.marks.clear(spec.JobID)
			return nil, api.Errorf(api.CodeBrokerUnavailable, "runtime broker %s is stopping", b.cfg.BrokerID)
		}
	}
	return accepted(rj.spec), nil
}

// openSpoke opens a fleet cluster (nil: the ambient one). A secret the
// Hub does not have is its secret_not_found; any other failure (a
// kubeconfig that does not load, a bad key) is invalid_request naming the
// cluster, never the secret's value.
func (b *Broker) openSpoke(ctx context.Context, c *fleet.Cluster) (*connect.Spoke, error) {
	js := b.jobs
	var sp *connect.Spoke
	var err error
	if c == nil {
		sp, err = js.cfg.Spokes.Ambient(js.cfg.Ambient, js.cfg.AmbientNamespace)
	} else {
		sp, err = js.cfg.Spokes.Open(ctx, c, b.secrets)
	}
	if err != nil {
		if ae := (*api.Error)(nil); errors.As(err, &ae) {
			return nil, api.Errorf(ae.Code, "%s", err.Error())
		}
		if ctx.Err() != nil {
			return nil, ctxError(ctx.Err())
		}
		return nil, api.BadRequest("%v", err)
	}
	for _, w := range sp.Warnings {
		b.log.Warn(w, "cluster", sp.Name())
	}
	return sp, nil
}

// specFor is the runner's Spec of a job.run on spoke sp.
func specFor(run wire.JobRun, sp *connect.Spoke, brokerID string) jobs.Spec {
	j := run.Job
	queue := j.Queue
	if queue == "" && sp.Cluster != nil {
		queue = sp.Cluster.Queue
	}
	deadline := time.Duration(j.DeadlineSeconds) * time.Second
	if deadline <= 0 {
		deadline = api.DefaultJobDeadline
	}
	return jobs.Spec{JobID: j.ID, AgentID: j.AgentID, BrokerID: brokerID, Cluster: sp.Name(), Tier: string(sp.Tier),
		Namespace: sp.Namespace, Queue: queue, Image: j.Image, Command: j.Command, Env: run.Env, GPUs: j.GPUs,
		Deadline: deadline}
}

func accepted(s jobs.Spec) wire.JobAccepted {
	return wire.JobAccepted{Cluster: s.Cluster, Tier: s.Tier, Namespace: s.Namespace, Name: jobs.Name(s.JobID)}
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

// report queues a Job's update unless a terminal one already was; it
// says whether it queued it.
func (b *Broker) report(rj *runningJob, u wire.JobUpdate) bool {
	js := b.jobs
	js.mu.Lock()
	if rj.ended {
		js.mu.Unlock()
		return false
	}
	if u.State.Terminal() {
		rj.ended = true
	}
	js.mu.Unlock()
	u.JobID = rj.spec.JobID
	where := accepted(rj.spec) // for a Hub that lost job.run's answer
	u.Where = &where
	js.outbox.put(rj.spec.Cluster, u)
	if u.State.Terminal() {
		js.marks.clear(u.JobID) // the outbox keeps the end now
	}
	return true
}

// runJob submits (when submit) and follows one Job until it is terminal,
// its deadline and margin pass, or the broker stops (a restarted broker
// follows it again: Owned).
func (b *Broker) runJob(rj *runningJob, submit bool) {
	js := b.jobs
	s := rj.spec
	log := b.jobLog(s.Cluster, s.JobID)
	ctx := rj.ctx
	defer close(rj.done)
	defer js.remove(rj)
	if submit {
		select {
		case <-js.sweptCh(s.Cluster):
		case <-ctx.Done():
		}
		if err := js.cfg.Runner.Submit(ctx, rj.spoke.Clients, s); err != nil {
			if b.runCtx.Err() != nil || js.isCancelling(rj) {
				return
			}
			log.Warn("job not submitted", "tier", s.Tier, "err", err)
			b.report(rj, wire.JobUpdate{State: api.JobStateError, Message: "not submitted",
				Error: jobError(s, fmt.Sprintf("submit: %v", err))})
			return
		}
		js.marks.clear(s.JobID) // on the spoke now: a restart sweeps or follows it
		log.Info("job submitted", "tier", s.Tier, "namespace", s.Namespace, "name", jobs.Name(s.JobID))
	}
	last := js.cfg.Runner.Follow(ctx, rj.spoke.Clients, s, js.cfg.FollowOptions, func(p jobs.Progress) {
		b.report(rj, updateOf(p))
	})
	switch {
	case last.State == api.JobStateError && last.StartedAt == nil && !js.isCancelling(rj) && b.runCtx.Err() == nil:
		// Given up before it started (its spoke unreachable for too long,
		// credentials refused): a Job left suspended there could be
		// admitted later and run with nobody following it, so it is
		// deleted when the spoke lets us; else the next start's sweep
		// does.
		dctx, cancel := context.WithTimeout(b.runCtx, 30*time.Second)
		err := js.cfg.Runner.Cancel(dctx, rj.spoke.Clients, s.Namespace, s.JobID, s.BrokerID)
		cancel()
		if err != nil {
			log.Warn("job given up before it started; not deleted from its spoke (the next start's sweep will)", "err", err)
		} else {
			log.Info("job given up before it started; deleted from its spoke")
		}
		b.report(rj, updateOf(last))
	case last.State.Terminal():
		b.report(rj, updateOf(last))
		log.Info("job finished", "state", last.State)
	case js.isCancelling(rj):
	case b.runCtx.Err() != nil:
		log.Info("broker stopping: job left running on its spoke, followed again at the next start")
	default:
		// The runner ended its follow without a final state and nobody
		// asked it to stop (it bounds a started Job by its deadline and
		// followMargin).
		if b.report(rj, wire.JobUpdate{State: api.JobStateError, Message: "not followed to its end",
			Error: jobError(s, fmt.Sprintf("the job was not followed to its end (deadline %v, margin %v)", s.Deadline, followMargin))}) {
			log.Warn("job given up: its follow ended without a final state", "deadline", s.Deadline)
		}
	}
}

func jobError(s jobs.Spec, msg string) *api.JobError {
	return &api.JobError{Status: "error", Cluster: s.Cluster, Tier: s.Tier, Message: msg}
}

// updateOf is a Progress as a job.update.
func updateOf(p jobs.Progress) wire.JobUpdate {
	return wire.JobUpdate{State: p.State, Message: p.Message, StartedAt: p.StartedAt, FinishedAt: p.FinishedAt,
		ExitCode: p.ExitCode, Result: p.Result, Error: p.Error, Logs: p.Logs, Trace: p.Trace}
}

// handleJobCancel answers job.cancel: the Job is deleted on its spoke and
// reported cancelled.
func (b *Broker) handleJobCancel(ctx context.Context, req *wire.Request) (any, error) {
	js := b.jobs
	var ref wire.JobRef
	if err := req.Decode(&ref); err != nil {
		return nil, api.BadRequest("%s: %v", req.Method, err)
	}
	if err := validID("job ID", ref.JobID); err != nil {
		return nil, err
	}
	rj := js.get(ref.JobID)
	if rj == nil {
		return nil, api.NotFound(api.CodeJobNotFound, "job %s is not followed by runtime broker %s", ref.JobID, b.cfg.BrokerID)
	}
	s := rj.spec
	log := b.jobLog(s.Cluster, s.JobID)
	// The follow (and a submit in flight) ends first, so that no submit
	// creates the Job after its deletion and no report follows cancelled.
	js.mu.Lock()
	rj.cancelling = true
	js.mu.Unlock()
	rj.cancel()
	select {
	case <-rj.done:
	case <-ctx.Done():
		return nil, ctxError(ctx.Err())
	}
	if err := js.cfg.Runner.Cancel(ctx, rj.spoke.Clients, s.Namespace, s.JobID, s.BrokerID); err != nil {
		log.Warn("job not cancelled; following it again", "tier", s.Tier, "err", err)
		if again, fresh := js.add(b.runCtx, s, rj.spoke); fresh && !js.goJob(func() { b.runJob(again, false) }) {
			js.remove(again)
		}
		if ae := (*api.Error)(nil); errors.As(err, &ae) {
			return nil, ae
		}
		return nil, api.Errorf(api.CodeRuntimeError, "cancel job %s on cluster %s (%s tier): %v", s.JobID, s.Cluster, s.Tier, err)
	}
	now := time.Now().UTC()
	b.report(rj, wire.JobUpdate{State: api.JobStateCancelled, Message: "cancelled", FinishedAt: &now})
	log.Info("job cancelled")
	return struct{}{}, nil
}
