package testenv

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
)

// Delegated Jobs with the spoke side faked: the Hub, the broker's Jobs
// code and the control channel between them are the real ones; only what
// the broker does on a spoke cluster (open it, submit, follow, cancel,
// sweep) is a JobSpoke the test drives. The real spoke side is covered by
// test/system against a real kube-apiserver.

// DefaultJobClusters is the brokers' fleet file when Options.Jobs is set
// and Options.JobClusters is not: two public clusters, h200 with a Kueue
// queue of its own and b200 without.
const DefaultJobClusters = `
[clusters.h200]
kubeconfig_secret = "H200_KUBECONFIG"
namespace = "scion-jobs"
queue = "h200"

[clusters.b200]
kubeconfig_secret = "B200_KUBECONFIG"
namespace = "scion-jobs"
`

// jobsConfig is broker b's broker.Config.Jobs: the fleet file of the
// options, every profile the broker offers (so that its agents may run
// Jobs on that fleet), and b's JobSpoke.
func (e *Env) jobsConfig(b *Broker) broker.JobsConfig {
	if !e.opts.Jobs {
		return broker.JobsConfig{}
	}
	f, err := fleet.Parse("clusters.toml", []byte(cmp.Or(e.opts.JobClusters, DefaultJobClusters)))
	if err != nil {
		e.T.Fatalf("testenv: fleet of %s: %v", b.Name, err)
	}
	var profiles []config.ProfileSettings
	for _, p := range e.opts.Profiles[b.Name] {
		profiles = append(profiles, config.ProfileSettings{Name: p.Name})
	}
	return broker.JobsConfig{Fleet: f, Profiles: profiles, Source: "settings.yaml",
		Spokes: spokeOpener{}, Runner: spokeRunner{b.Spoke}}
}

// JobSpoke is a broker's spoke clusters, in memory: it records what the
// broker submits and cancels there, and reports to the broker's follow
// of a Job what the test says the Job did (Report, Succeed, Fail). A
// Job's state outlives the broker, as a Job on a real cluster does: a
// restarted broker finds its unfinished Jobs (Owned) and follows them
// again, reading the reports not yet read.
//
// Nothing happens to a Job by itself: it stays as submitted (the Hub
// shows it pending) until the test reports its progress.
type JobSpoke struct {
	mu      sync.Mutex
	jobs    map[string]*spokeJob // by Hub Job ID
	submits []jobs.Spec          // every Submit of a live broker, in order
	cancels []string             // the Job IDs of every Cancel, in order
	// submitErr fails the next submits (FailSubmits).
	submitErr error
}

// spokeJob is one Job on the spoke.
type spokeJob struct {
	spec jobs.Spec
	// reports are the progress the test reported that no follow has
	// read yet; wake is closed (and replaced) when one is added.
	reports []jobs.Progress
	wake    chan struct{}
	// last is the last progress a follow read; ended is set once a
	// follow read a terminal one, or the Job was cancelled.
	last  jobs.Progress
	ended bool
	// onSpoke is set by Submit: the Job exists on the cluster.
	onSpoke bool
}

func newJobSpoke() *JobSpoke { return &JobSpoke{jobs: map[string]*spokeJob{}} }

// job is Job id's entry, made on first use (under s.mu).
func (s *JobSpoke) job(id string) *spokeJob {
	j := s.jobs[id]
	if j == nil {
		j = &spokeJob{wake: make(chan struct{})}
		s.jobs[id] = j
	}
	return j
}

// Report tells the broker following Job id (now, or once it follows it)
// that the Job is now as p says: a non-terminal p is reported to the Hub
// as a job.update, a terminal one ends the follow (and the broker reports
// it as the Job's end). Reports are read in order.
func (s *JobSpoke) Report(id string, p jobs.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.job(id)
	j.reports = append(j.reports, p)
	close(j.wake)
	j.wake = make(chan struct{})
}

// Succeed ends Job id as succeeded with exit code 0, result (its result
// line's JSON; "" for none) and logs.
func (s *JobSpoke) Succeed(id, result, logs string) {
	s.finish(id, api.JobStateSucceeded, "pod succeeded", 0, result, logs)
}

// Fail ends Job id as failed with exitCode and logs.
func (s *JobSpoke) Fail(id string, exitCode int, logs string) {
	s.finish(id, api.JobStateFailed, "pod failed", exitCode, "", logs)
}

func (s *JobSpoke) finish(id string, st api.JobState, msg string, exitCode int, result, logs string) {
	now := time.Now().UTC()
	p := jobs.Progress{State: st, Message: msg, StartedAt: &now, FinishedAt: &now, ExitCode: &exitCode}
	if result != "" {
		p.Result = []byte(result)
	}
	if logs != "" {
		p.Logs = &logs
	}
	s.Report(id, p)
}

// FailSubmits makes every submit fail with err from now on (nil: they
// succeed again): the broker reports such a Job as error.
func (s *JobSpoke) FailSubmits(err error) {
	s.mu.Lock()
	s.submitErr = err
	s.mu.Unlock()
}

// Submits are the specs of every submit the broker made, in order (a
// Job submitted twice is there twice, a submit FailSubmits failed too).
func (s *JobSpoke) Submits() []jobs.Spec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.submits)
}

// Cancels are the Job IDs of every cancel (a deletion on the spoke) the
// broker made, in order.
func (s *JobSpoke) Cancels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cancels)
}

// WaitSubmits waits until the broker made at least n submits and returns
// them all.
func (s *JobSpoke) WaitSubmits(t testing.TB, n int) []jobs.Spec {
	t.Helper()
	var got []jobs.Spec
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		if got = s.Submits(); len(got) < n {
			return fmt.Errorf("the spoke saw %d submits, want %d", len(got), n)
		}
		return nil
	})
	return got
}

// WaitCancelled waits until the broker cancelled Job id on the spoke.
func (s *JobSpoke) WaitCancelled(t testing.TB, id string) {
	t.Helper()
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		if c := s.Cancels(); !slices.Contains(c, id) {
			return fmt.Errorf("job %s not cancelled on the spoke (cancels: %v)", id, c)
		}
		return nil
	})
}

// spokeOpener opens the broker's spokes (broker.Spokes): every cluster
// opens at once, without a network or its kubeconfig secret.
type spokeOpener struct{}

func (spokeOpener) Open(_ context.Context, c *fleet.Cluster, _ connect.Secrets) (*connect.Spoke, error) {
	return &connect.Spoke{Cluster: c, Tier: c.Tier(), Namespace: cmp.Or(c.Namespace, "default")}, nil
}

func (spokeOpener) Ambient(_ *rest.Config, ns string) (*connect.Spoke, error) {
	return &connect.Spoke{Tier: connect.TierAmbient, Namespace: cmp.Or(ns, "default")}, nil
}

func (spokeOpener) Close() {}

// spokeRunner is a JobSpoke as the broker's broker.JobRunner.
type spokeRunner struct{ s *JobSpoke }

func (r spokeRunner) Submit(ctx context.Context, _ jobs.Clients, spec jobs.Spec) error {
	if err := ctx.Err(); err != nil {
		return err // a broker stopping: the create never reaches the cluster
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.submits = append(s.submits, spec)
	if s.submitErr != nil {
		return s.submitErr
	}
	j := s.job(spec.JobID)
	j.spec, j.onSpoke = spec, true
	return nil
}

// Follow reports the Job's progress as the test reports it, until a
// terminal one (returned) or ctx's end (the last one read: the Job goes
// on, unfinished).
func (r spokeRunner) Follow(ctx context.Context, _ jobs.Clients, spec jobs.Spec, _ jobs.FollowOptions, report func(jobs.Progress)) jobs.Progress {
	s := r.s
	for {
		s.mu.Lock()
		j := s.job(spec.JobID)
		if len(j.reports) == 0 {
			wake, last := j.wake, j.last
			s.mu.Unlock()
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				if last.State == "" {
					last.State = api.JobStateQueued
				}
				return last
			}
		}
		p := j.reports[0]
		j.reports = j.reports[1:]
		j.last = p
		if p.State.Terminal() {
			j.ended = true
		}
		s.mu.Unlock()
		if p.State.Terminal() {
			return p
		}
		report(p)
	}
}

func (r spokeRunner) Cancel(_ context.Context, _ jobs.Clients, _, id, _ string) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancels = append(s.cancels, id)
	if j := s.jobs[id]; j != nil {
		j.ended = true
	}
	return nil
}

// Settle finds a Job given up while its spoke was unreachable gone: this
// spoke is never unreachable.
func (spokeRunner) Settle(context.Context, jobs.Clients, string, string, string) (jobs.Settled, error) {
	return jobs.SettledGone, nil
}

// Sweep finds no leftovers: a Job is on the spoke only once submitted,
// and then it is followed.
func (spokeRunner) Sweep(context.Context, jobs.Clients, string, string, string) ([]string, error) {
	return nil, nil
}

// Owned are the broker's Jobs on the spoke not yet ended: a restarted
// broker follows them again.
func (r spokeRunner) Owned(_ context.Context, _ jobs.Clients, ns, brokerID, cluster string) ([]jobs.Spec, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jobs.Spec
	for _, j := range s.jobs {
		if j.onSpoke && !j.ended && j.spec.Namespace == ns && j.spec.BrokerID == brokerID && j.spec.Cluster == cluster {
			out = append(out, j.spec)
		}
	}
	return out, nil
}
