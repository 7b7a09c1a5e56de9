package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"
)

// fakeSpokes opens every cluster without a network: the Spoke carries the
// block, its tier and namespace. A cluster named "slow" never opens (its
// Open waits for the context), and a kubeconfig secret named MISSING is
// the Hub's secret_not_found.
type fakeSpokes struct {
	mu     sync.Mutex
	opened []string
}

func (f *fakeSpokes) Open(ctx context.Context, c *fleet.Cluster, _ connect.Secrets) (*connect.Spoke, error) {
	f.mu.Lock()
	f.opened = append(f.opened, c.Name)
	f.mu.Unlock()
	if c.Name == "slow" {
		<-ctx.Done()
		return nil, fmt.Errorf("cluster slow: %w", ctx.Err())
	}
	if c.KubeconfigSecret == "MISSING" {
		return nil, fmt.Errorf("cluster %s: kubeconfig secret MISSING: %w", c.Name, api.NotFound(api.CodeSecretNotFound, "secret MISSING not found"))
	}
	return &connect.Spoke{Cluster: c, Tier: c.Tier(), Namespace: cmp.Or(c.Namespace, "default")}, nil
}

func (f *fakeSpokes) Ambient(_ *rest.Config, ns string) (*connect.Spoke, error) {
	return &connect.Spoke{Tier: connect.TierAmbient, Namespace: cmp.Or(ns, "default")}, nil
}

func (f *fakeSpokes) Close() {}

// fakeRunner stands in for spoke/jobs: Submit and Cancel are recorded,
// Follow reports what the test sends on the Job's channel, Sweep and
// Owned answer from tables.
type fakeRunner struct {
	mu        sync.Mutex
	progress  map[string]chan jobs.Progress
	submits   chan jobs.Spec
	follows   chan jobs.Spec
	cancels   chan string
	sweeps    chan string // cluster/namespace
	submitErr error
	owned     map[string][]jobs.Spec // by namespace
	swept     []string               // what every Sweep deletes
	opts      map[string]jobs.FollowOptions
	settles   chan settleAnswer // Settle's answers (nil: gone)
	// submitHangs makes Submit wait for its context (a broker that
	// stops before the create).
	submitHangs bool
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{progress: map[string]chan jobs.Progress{}, submits: make(chan jobs.Spec, 10),
		follows: make(chan jobs.Spec, 10), cancels: make(chan string, 10), sweeps: make(chan string, 10), owned: map[string][]jobs.Spec{}}
}

func (r *fakeRunner) ch(id string) chan jobs.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress[id] == nil {
		r.progress[id] = make(chan jobs.Progress, 10)
	}
	return r.progress[id]
}

func (r *fakeRunner) Submit(ctx context.Context, _ jobs.Clients, s jobs.Spec) error {
	r.submits <- s
	if r.submitHangs {
		<-ctx.Done()
		return ctx.Err()
	}
	return r.submitErr
}

func (r *fakeRunner) Follow(ctx context.Context, _ jobs.Clients, s jobs.Spec, o jobs.FollowOptions, report func(jobs.Progress)) jobs.Progress {
	r.mu.Lock()
	if r.opts == nil {
		r.opts = map[string]jobs.FollowOptions{}
	}
	r.opts[s.JobID] = o
	r.mu.Unlock()
	r.follows <- s
	ch := r.ch(s.JobID)
	for {
		select {
		case p := <-ch:
			if p.State.Terminal() {
				return p
			}
			report(p)
		case <-ctx.Done():
			return jobs.Progress{State: api.JobStateRunning}
		}
	}
}

func (r *fakeRunner) Cancel(_ context.Context, _ jobs.Clients, ns, id, _ string) error {
	r.cancels <- ns + "/" + id
	return nil
}

// settleAnswer is one answer of the fake Settle.
type settleAnswer struct {
	got jobs.Settled
	err error
}

func (r *fakeRunner) Settle(ctx context.Context, _ jobs.Clients, _, _, _ string) (jobs.Settled, error) {
	r.mu.Lock()
	ch := r.settles
	r.mu.Unlock()
	if ch == nil {
		return jobs.SettledGone, nil
	}
	select {
	case a := <-ch:
		return a.got, a.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (r *fakeRunner) Sweep(_ context.Context, _ jobs.Clients, ns, brokerID, _ string) ([]string, error) {
	r.sweeps <- ns + "/" + brokerID
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.swept, nil
}

func (r *fakeRunner) Owned(_ context.Context, _ jobs.Clients, ns, _, cluster string) ([]jobs.Spec, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []jobs.Spec // as the label selector does (a Spec naming no cluster is any block's)
	for _, s := range r.owned[ns] {
		if s.Cluster == "" || s.Cluster == cluster {
			out = append(out, s)
		}
	}
	return out, nil
}

// testFleet: gpu in the file (namespace gpu-ns), for every profile; team-a
// adds private; team-b runs on gpu by default; broken's secret is missing.
func testFleet(t *testing.T) (*fleet.Fleet, []config.ProfileSettings) {
	f, err := fleet.Parse("clusters.toml", []byte(`
[clusters.gpu]
kubeconfig_secret = "GPU_KC"
namespace = "gpu-ns"
queue = "h200"
status_retry = "42s"
[clusters.broken]
kubeconfig_secret = "MISSING"
`))
	if err != nil {
		t.Fatal(err)
	}
	return f, []config.ProfileSettings{
		{Name: "team-a", Clusters: map[string]config.ClusterSettings{"private": {KubeconfigSecret: "PRIV_KC", Namespace: "priv"}}},
		{Name: "team-b", Jobs: &config.ProfileJobs{Cluster: "gpu"}},
	}
}

type jobsEnv struct {
	hub    *testHub
	b      *Broker
	runner *fakeRunner
	spokes *fakeSpokes
}

func startJobsBroker(t *testing.T, edit func(*JobsConfig)) *jobsEnv {
	t.Helper()
	hub := newTestHub(t)
	rt := fake.New()
	// a1 has no profile; ab and aa were created under team-b and team-a
	// (the label the broker puts on an agent of a profile).
	for _, a := range []struct{ id, profile string }{{"a1", ""}, {"ab", "team-b"}, {"aa", "team-a"}} {
		sp := runtime.Spec{AgentID: a.id, ProjectID: "p1", RunID: "r-" + a.id}
		if a.profile != "" {
			sp.Labels = map[string]string{runtime.LabelProfile: a.profile}
		}
		if _, err := rt.Create(t.Context(), sp); err != nil {
			t.Fatal(err)
		}
	}
	f, profiles := testFleet(t)
	e := &jobsEnv{hub: hub, runner: newFakeRunner(), spokes: &fakeSpokes{}}
	e.b = startBroker(t, hub, rt, func(c *Config) {
		c.Jobs = JobsConfig{Fleet: f, Profiles: profiles, Source: "settings.yaml", Spokes: e.spokes, Runner: e.runner}
		if edit != nil {
			edit(&c.Jobs)
		}
	})
	waitConnected(t, e.b)
	return e
}

func jobRun(id, agent, cluster, profile string) wire.JobRun {
	return wire.JobRun{Job: api.Job{ID: id, AgentID: agent, Cluster: cluster, Image: "busybox", Command: []string{"true"},
		DeadlineSeconds: 60, State: api.JobStatePending}, Profile: profile, Env: map[string]string{"K": "v"}}
}

// TestJobRunRefusals: an unknown cluster and another profile's cluster get
// one answer (cluster_not_found, the same message shape); an agent this
// broker does not run is agent_not_found; no cluster and no ambient is
// cluster_not_found; a missing secret is the Hub's secret_not_found.
func TestJobRunRefusals(t *testing.T) {
	e := startJobsBroker(t, nil)
	hello := recv(t, e.hub.hellos, "hello")
	if !slices.Contains(hello.Capabilities, wire.CapJobs) {
		t.Errorf("capabilities %v lack %s", hello.Capabilities, wire.CapJobs)
	}
	var acc wire.JobAccepted
	unknown := e.hub.call(wire.MethodJobRun, jobRun("j1", "ab", "nowhere", "team-b"), &acc)
	wantCode(t, unknown, api.CodeClusterNotFound)
	other := e.hub.call(wire.MethodJobRun, jobRun("j2", "ab", "private", "team-b"), &acc)
	wantCode(t, other, api.CodeClusterNotFound)
	if api.AsError(other).Status != 404 {
		t.Errorf("status %d", api.AsError(other).Status)
	}
	if a, b := strings.Replace(unknown.Error(), `"nowhere"`, "X", 1), strings.Replace(other.Error(), `"private"`, "X", 1); a != b {
		t.Errorf("another profile's cluster answers unlike an unknown one:\n%s\n%s", a, b)
	}
	// team-a does see private.
	if err := e.hub.call(wire.MethodJobRun, jobRun("j3", "aa", "private", "team-a"), &acc); err != nil || acc.Cluster != "private" || acc.Namespace != "priv" {
		t.Fatalf("team-a's private: %+v, %v", acc, err)
	}
	wantCode(t, e.hub.call(wire.MethodJobRun, jobRun("j4", "ghost", "gpu", "team-b"), &acc), api.CodeAgentNotFound)
	wantCode(t, e.hub.call(wire.MethodJobRun, jobRun("j5", "a1", "", ""), &acc), api.CodeClusterNotFound)
	wantCode(t, e.hub.call(wire.MethodJobRun, jobRun("j6", "a1", "broken", ""), &acc), api.CodeSecretNotFound)
	wantCode(t, e.hub.call(wire.MethodJobRun, jobRun("j7", "a1", "gpu", "no-such-profile"), &acc), api.CodeInvalidRequest)
	bad := jobRun("j8", "a1", "gpu", "")
	bad.Job.Command = nil
	wantCode(t, e.hub.call(wire.MethodJobRun, bad, &acc), api.CodeInvalidRequest)
	select {
	case s := <-e.runner.submits:
		if s.JobID != "j3" {
			t.Errorf("a refused job.run was submitted: %+v", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("j3 was not submitted")
	}
}

// TestJobRunAcceptedAndUpdates: the profile's cluster is used when the
// Job names none; the answer says where the Job goes; its progress
// reaches the Hub as job.update, the terminal one last; a retried job.run
// is answered again and not submitted twice.
func TestJobRunAcceptedAndUpdates(t *testing.T) {
	e := startJobsBroker(t, nil)
	var acc wire.JobAccepted
	if err := e.hub.call(wire.MethodJobRun, jobRun("j1", "ab", "", "team-b"), &acc); err != nil {
		t.Fatal(err)
	}
	// The queue is the cluster block's (the run named none).
	if acc != (wire.JobAccepted{Cluster: "gpu", Tier: "public", Namespace: "gpu-ns", Name: "scion-job-j1", Queue: "h200"}) {
		t.Fatalf("accepted %+v", acc)
	}
	s := recv(t, e.runner.submits, "submit")
	if s.Queue != "h200" || s.BrokerID != e.hub.brokerID || s.Cluster != "gpu" || s.Deadline != time.Minute || s.Env["K"] != "v" {
		t.Errorf("spec %+v", s)
	}
	recv(t, e.runner.follows, "follow")
	var again wire.JobAccepted
	if err := e.hub.call(wire.MethodJobRun, jobRun("j1", "ab", "", "team-b"), &again); err != nil || again != acc {
		t.Fatalf("retried job.run: %+v, %v", again, err)
	}
	logs := "step 1\n"
	e.runner.ch("j1") <- jobs.Progress{State: api.JobStateRunning, Message: "pod running", Logs: &logs}
	u := recv(t, e.hub.jobUpdates, "running update")
	if u.JobID != "j1" || u.State != api.JobStateRunning || u.Logs == nil || *u.Logs != logs {
		t.Fatalf("update %+v", u)
	}
	// Where the Job went, for a Hub that lost job.run's answer.
	if u.Where == nil || *u.Where != acc {
		t.Fatalf("update's where: %+v, want %+v", u.Where, acc)
	}
	code := 0
	e.runner.ch("j1") <- jobs.Progress{State: api.JobStateSucceeded, ExitCode: &code, Result: []byte(`{"loss":0.1}`)}
	u = recv(t, e.hub.jobUpdates, "terminal update")
	if u.State != api.JobStateSucceeded || u.ExitCode == nil || string(u.Result) != `{"loss":0.1}` {
		t.Fatalf("terminal update %+v", u)
	}
	select {
	case s := <-e.runner.submits:
		t.Fatalf("submitted twice: %+v", s)
	default:
	}
}

// TestJobRunProfileIsTheAgents: the profile whose fleet a Job may use is
// the one the agent was created under (its label on the broker), not
// whatever job.run says: a Hub (forged, compromised, or wrong) naming
// another profile does not reach that profile's spokes.
func TestJobRunProfileIsTheAgents(t *testing.T) {
	e := startJobsBroker(t, nil)
	var acc wire.JobAccepted
	for _, tc := range []struct{ id, agent, profile string }{
		{"p1", "a1", "team-a"}, // no profile, claims team-a
		{"p2", "ab", "team-a"}, // team-b, claims team-a
		{"p3", "aa", ""},       // team-a, claims none
	} {
		err := e.hub.call(wire.MethodJobRun, jobRun(tc.id, tc.agent, "private", tc.profile), &acc)
		if err == nil {
			t.Errorf("agent %s as profile %q reached cluster private: %+v", tc.agent, tc.profile, acc)
		}
	}
	select {
	case s := <-e.runner.submits:
		t.Fatalf("submitted %+v", s)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestJobUpdateResentAfterReconnect: an update lost with the control
// channel is sent again on the next session; the terminal one arrives.
func TestJobUpdateResentAfterReconnect(t *testing.T) {
	e := startJobsBroker(t, nil)
	var acc wire.JobAccepted
	if err := e.hub.call(wire.MethodJobRun, jobRun("j1", "a1", "gpu", ""), &acc); err != nil {
		t.Fatal(err)
	}
	recv(t, e.runner.follows, "follow")
	e.hub.dropOnUpdates.Store(1)
	e.runner.ch("j1") <- jobs.Progress{State: api.JobStateRunning, Message: "first"}
	u := recv(t, e.hub.jobUpdates, "the update, resent")
	if u.State != api.JobStateRunning || u.Message != "first" {
		t.Fatalf("resent %+v", u)
	}
	if n := e.hub.dials.Load(); n < 2 {
		t.Fatalf("%d dials: the update was not lost with a channel", n)
	}
	e.runner.ch("j1") <- jobs.Progress{State: api.JobStateFailed, Message: "exit 1"}
	if u := recv(t, e.hub.jobUpdates, "terminal"); u.State != api.JobStateFailed {
		t.Fatalf("terminal %+v", u)
	}
}

// TestJobCancel: job.cancel deletes the Job on its spoke's namespace and
// reports cancelled; the follow's later news is not sent; an unknown Job
// is job_not_found.
func TestJobCancel(t *testing.T) {
	e := startJobsBroker(t, nil)
	var acc wire.JobAccepted
	if err := e.hub.call(wire.MethodJobRun, jobRun("j1", "a1", "gpu", ""), &acc); err != nil {
		t.Fatal(err)
	}
	recv(t, e.runner.follows, "follow")
	if err := e.hub.call(wire.MethodJobCancel, wire.JobRef{JobID: "j1"}, nil); err != nil {
		t.Fatal(err)
	}
	if c := recv(t, e.runner.cancels, "cancel"); c != "gpu-ns/j1" {
		t.Errorf("cancelled %s", c)
	}
	if u := recv(t, e.hub.jobUpdates, "cancelled"); u.State != api.JobStateCancelled || u.FinishedAt == nil {
		t.Fatalf("update %+v", u)
	}
	e.runner.ch("j1") <- jobs.Progress{State: api.JobStateRunning}
	select {
	case u := <-e.hub.jobUpdates:
		t.Fatalf("an update after cancelled: %+v", u)
	case <-time.After(300 * time.Millisecond):
	}
	wantCode(t, e.hub.call(wire.MethodJobCancel, wire.JobRef{JobID: "nope"}, nil), api.CodeJobNotFound)
}

// TestJobsStartupSweepAndResume: after the first hello every cluster of
// the fleet and the profiles is swept with the broker's ID and its owned
// Jobs are followed again; a spoke that never opens blocks neither the
// others nor the broker.
func TestJobsStartupSweepAndResume(t *testing.T) {
	runner := newFakeRunner()
	runner.owned["gpu-ns"] = []jobs.Spec{{JobID: "old1", AgentID: "a1", Namespace: "gpu-ns", Deadline: time.Hour}}
	runner.swept = []string{"scion-job-leftover"}
	f, profiles := testFleet(t)
	f.Clusters["slow"] = &fleet.Cluster{Name: "slow", KubeconfigSecret: "SLOW"}
	hub := newTestHub(t)
	b := startBroker(t, hub, fake.New(), func(c *Config) {
		c.Jobs = JobsConfig{Fleet: f, Profiles: profiles, Spokes: &fakeSpokes{}, Runner: runner, StartupTimeout: time.Minute}
	})
	waitConnected(t, b)
	got := map[string]bool{}
	for range 2 { // gpu and private; broken does not open, slow never does
		got[recv(t, runner.sweeps, "sweep")] = true
	}
	if !got["gpu-ns/"+hub.brokerID] || !got["priv/"+hub.brokerID] {
		t.Errorf("swept %v", got)
	}
	if s := recv(t, runner.follows, "resumed follow"); s.JobID != "old1" || s.Cluster != "gpu" || s.Tier != "public" || s.BrokerID != hub.brokerID {
		t.Errorf("resumed %+v", s)
	}
	runner.ch("old1") <- jobs.Progress{State: api.JobStateRunning, Message: "still"}
	for {
		u := recv(t, hub.jobUpdates, "resumed update")
		if u.JobID == "leftover" {
			continue // the swept one's end (TestJobsStartupReportsSwept)
		}
		if u.JobID != "old1" || u.Message != "still" {
			t.Errorf("update %+v", u)
		}
		break
	}
}

// TestJobsStartupReportsSwept: a leftover the startup sweep deletes was a
// Job the Hub still holds as pending or queued, and no follow will ever
// report it again: the sweep reports its end (error, typed, naming the
// cluster and tier), so that its ledger row and a waiting `scion job run`
// end.
func TestJobsStartupReportsSwept(t *testing.T) {
	runner := newFakeRunner()
	runner.swept = []string{"scion-job-leftover"}
	f, profiles := testFleet(t)
	hub := newTestHub(t)
	b := startBroker(t, hub, fake.New(), func(c *Config) {
		c.Jobs = JobsConfig{Fleet: f, Profiles: profiles, Spokes: &fakeSpokes{}, Runner: runner, StartupTimeout: time.Minute}
	})
	waitConnected(t, b)
	u := recv(t, hub.jobUpdates, "the swept Job's update")
	if u.JobID != "leftover" || u.State != api.JobStateError || u.Error == nil || u.Error.Cluster == "" || u.Error.Tier == "" || u.FinishedAt == nil {
		t.Fatalf("update %+v (error %+v)", u, u.Error)
	}
	if u.Where == nil || u.Where.Name != "scion-job-leftover" || u.Where.Cluster != u.Error.Cluster {
		t.Errorf("the swept Job's where: %+v", u.Where)
	}
}

func TestResolveCluster(t *testing.T) {
	f, profiles := testFleet(t)
	fa, err := f.ForProfile(profiles[0], "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		f         *fleet.Fleet
		req, prof string
		ambient   bool
		want      string // cluster, "ambient", or the error code
	}{
		{"requested", f, "gpu", "", false, "gpu"},
		{"requested over profile", fa, "private", "gpu", false, "private"},
		{"profile's", f, "", "gpu", false, "gpu"},
		{"ambient when none", f, "", "", true, "ambient"},
		{"none and no ambient", f, "", "", false, api.CodeClusterNotFound},
		{"unknown", f, "x", "", true, api.CodeClusterNotFound},
		{"another profile's", f, "private", "", true, api.CodeClusterNotFound},
		{"ambient by name", f, "ambient", "", true, "ambient"},
		{"ambient by name, none", f, "ambient", "", false, api.CodeClusterNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := resolveCluster(tc.f, tc.req, tc.prof, tc.ambient, "b1")
			got := connect.AmbientCluster
			switch {
			case err != nil:
				got = api.AsError(err).Code
			case tg.cluster != nil:
				got = tg.cluster.Name
			}
			if got != tc.want {
				t.Errorf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

func TestMergeUpdate(t *testing.T) {
	logs := "l"
	one := 1
	older := wire.JobUpdate{JobID: "j", State: api.JobStateRunning, Logs: &logs, ExitCode: &one, Message: "a"}
	m := mergeUpdate(older, wire.JobUpdate{JobID: "j", State: api.JobStateRunning, Message: "b"})
	if m.Message != "b" || m.Logs != &logs || m.ExitCode != &one {
		t.Errorf("news lost: %+v", m)
	}
	term := wire.JobUpdate{JobID: "j", State: api.JobStateCancelled}
	if m := mergeUpdate(term, older); m.State != api.JobStateCancelled {
		t.Errorf("a terminal update was replaced: %+v", m)
	}
	if m := mergeUpdate(older, term); m.State != api.JobStateCancelled || m.Logs != &logs {
		t.Errorf("terminal over running: %+v", m)
	}
}

// TestBadProfileClusterFailsNew: a profile whose jobs.cluster its fleet
// lacks refuses the broker's start, naming the profile and cluster.
func TestBadProfileClusterFailsNew(t *testing.T) {
	f, _ := testFleet(t)
	_, err := New(Config{HubEndpoint: "http://127.0.0.1:1", BrokerID: "b", Secret: []byte("s"), Runtime: fake.New(), DataDir: t.TempDir(),
		Jobs: JobsConfig{Fleet: f, Source: "settings.yaml", Profiles: []config.ProfileSettings{{Name: "p", Jobs: &config.ProfileJobs{Cluster: "nope"}}}}})
	if err == nil || !strings.Contains(err.Error(), `jobs.cluster "nope"`) || !strings.Contains(err.Error(), "settings.yaml") {
		t.Fatalf("err %v", err)
	}
	_, err = New(Config{HubEndpoint: "http://127.0.0.1:1", BrokerID: "b", Secret: []byte("s"), Runtime: fake.New(), DataDir: t.TempDir(),
		Jobs: JobsConfig{Fleet: f, Source: "settings.yaml", Profiles: []config.ProfileSettings{{Name: "p", Clusters: map[string]config.ClusterSettings{"x": {}}}}}})
	if err == nil || !strings.Contains(err.Error(), "clusters.x.kubeconfig_secret") {
		t.Fatalf("err %v", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatal("unreachable")
	}
}

// TestJobOutboxKeepsTerminalOnDisk: a terminal update not yet
// acknowledged survives a restart (the next outbox loads it); a running
// one is not written; an ack removes the file.
func TestJobOutboxKeepsTerminalOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outbox")
	log := slog.New(slog.DiscardHandler)
	o := newJobOutbox(dir, log)
	o.put("gpu", wire.JobUpdate{JobID: "j1", State: api.JobStateRunning})
	o.put("gpu", wire.JobUpdate{JobID: "j2", State: api.JobStateRunning})
	o.put("gpu", wire.JobUpdate{JobID: "j2", State: api.JobStateSucceeded, Message: "done"})
	again := newJobOutbox(dir, log).snapshot()
	if len(again) != 1 || again[0].U.JobID != "j2" || again[0].U.State != api.JobStateSucceeded || again[0].Cluster != "gpu" {
		t.Fatalf("after a restart: %+v", again)
	}
	for _, e := range o.snapshot() {
		o.ack(e.U.JobID, e.seq)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left on disk after the ack: %v", ents)
	}
}

// TestJobGivenUpBeforeItStartedIsDeleted: a Job the runner gives up while
// it is still queued (its spoke unreachable for too long) is deleted from
// the spoke, so that it cannot be admitted later and run unfollowed; one
// given up after it started is left to its deadline and TTL.
func TestJobGivenUpBeforeItStartedIsDeleted(t *testing.T) {
	e := startJobsBroker(t, nil)
	var acc wire.JobAccepted
	if err := e.hub.call(wire.MethodJobRun, jobRun("q1", "a1", "gpu", ""), &acc); err != nil {
		t.Fatal(err)
	}
	recv(t, e.runner.follows, "follow")
	e.runner.ch("q1") <- jobs.Progress{State: api.JobStateError, Message: "spoke unreachable",
		Error: &api.JobError{Status: "error", Cluster: "gpu", Tier: "public", Message: "unreachable for 5m0s"}}
	if id := recv(t, e.runner.cancels, "delete of the queued job"); id != "gpu-ns/q1" {
		t.Fatalf("deleted %q", id)
	}
	if u := recv(t, e.hub.jobUpdates, "terminal"); u.State != api.JobStateError || u.Error == nil {
		t.Fatalf("terminal %+v", u)
	}

	if err := e.hub.call(wire.MethodJobRun, jobRun("r1", "a1", "gpu", ""), &acc); err != nil {
		t.Fatal(err)
	}
	recv(t, e.runner.follows, "follow")
	started := time.Now()
	e.runner.ch("r1") <- jobs.Progress{State: api.JobStateError, StartedAt: &started, Message: "spoke unreachable",
		Error: &api.JobError{Status: "error", Cluster: "gpu", Tier: "public", Message: "unreachable"}}
	if u := recv(t, e.hub.jobUpdates, "terminal"); u.JobID != "r1" || u.State != api.JobStateError {
		t.Fatalf("terminal %+v", u)
	}
	select {
	case id := <-e.runner.cancels:
		t.Fatalf("a started job was deleted: %s", id)
	default:
	}
}

// TestJobAcceptedButNeverSubmittedIsReported: a broker that answered a
// job.run and stopped (or was killed) before its create reached the spoke
// leaves nothing there for the next start to sweep or follow, and the
// Hub keeps an accepted row pending: the next start reports it as error.
// One the spoke has (Owned: it was created and admitted) is followed, not
// reported.
func TestJobAcceptedButNeverSubmittedIsReported(t *testing.T) {
	hub := newTestHub(t)
	dir := t.TempDir()
	f, profiles := testFleet(t)
	rt := fake.New()
	if _, err := rt.Create(t.Context(), runtime.Spec{AgentID: "a1", ProjectID: "p1", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	t.Run("accepts and stops before submitting", func(t *testing.T) {
		runner := newFakeRunner()
		runner.submitHangs = true
		b := startBroker(t, hub, rt, func(c *Config) {
			c.DataDir = dir
			c.Jobs = JobsConfig{Fleet: f, Profiles: profiles, Spokes: &fakeSpokes{}, Runner: runner}
		})
		waitConnected(t, b)
		for _, id := range []string{"lost", "created"} {
			var acc wire.JobAccepted
			if err := hub.call(wire.MethodJobRun, jobRun(id, "a1", "gpu", ""), &acc); err != nil {
				t.Fatal(err)
			}
			recv(t, runner.submits, "the submit in flight")
		}
	})
	runner := newFakeRunner()
	runner.owned["gpu-ns"] = []jobs.Spec{{JobID: "created", AgentID: "a1", Namespace: "gpu-ns", Deadline: time.Hour}}
	b := startBroker(t, hub, rt, func(c *Config) {
		c.DataDir = dir
		c.Jobs = JobsConfig{Fleet: f, Profiles: profiles, Spokes: &fakeSpokes{}, Runner: runner}
	})
	waitConnected(t, b)
	u := recv(t, hub.jobUpdates, "the lost Job's update")
	if u.JobID != "lost" || u.State != api.JobStateError || u.Error == nil || u.Error.Cluster != "gpu" {
		t.Fatalf("update %+v", u)
	}
	if u.Where == nil || *u.Where != (wire.JobAccepted{Cluster: "gpu", Tier: "public", Namespace: "gpu-ns", Name: "scion-job-lost"}) {
		t.Errorf("the lost Job's where: %+v", u.Where)
	}
	if s := recv(t, runner.follows, "the created Job followed"); s.JobID != "created" {
		t.Fatalf("followed %+v", s)
	}
	select {
	case u := <-hub.jobUpdates:
		t.Fatalf("another update: %+v", u)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestJobStatusRetryPerCluster: a cluster's status_retry is how long its
// Jobs' status polls may fail before they are given up; others keep the
// broker's.
func TestJobStatusRetryPerCluster(t *testing.T) {
	e := startJobsBroker(t, func(c *JobsConfig) { c.FollowOptions.RetryFor = 7 * time.Second })
	var acc wire.JobAccepted
	for _, run := range []wire.JobRun{jobRun("g1", "a1", "gpu", ""), jobRun("p1", "aa", "private", "team-a")} {
		if err := e.hub.call(wire.MethodJobRun, run, &acc); err != nil {
			t.Fatal(err)
		}
		recv(t, e.runner.follows, "follow")
	}
	e.runner.mu.Lock()
	defer e.runner.mu.Unlock()
	if g, p := e.runner.opts["g1"].RetryFor, e.runner.opts["p1"].RetryFor; g != 42*time.Second || p != 7*time.Second {
		t.Fatalf("retry for: gpu %v (want 42s), private %v (want the broker's 7s)", g, p)
	}
}
