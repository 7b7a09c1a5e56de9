package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"
)

// TestDecideSettle: a given-up Job ends in the ledger only once the spoke
// said so (deleted, gone, or finished: its outcome read) or once its own
// deadline, which the spoke enforces, has passed since it started.
func TestDecideSettle(t *testing.T) {
	now := time.Now()
	started := now.Add(-10 * time.Minute)
	down := errors.New("dial tcp: i/o timeout")
	for _, tc := range []struct {
		name     string
		got      jobs.Settled
		err      error
		started  *time.Time
		deadline time.Duration
		want     settleDecision
	}{
		{"finished meanwhile", jobs.SettledFinished, nil, &started, time.Hour, settleFollow},
		{"deleted", jobs.SettledDeleted, nil, &started, time.Hour, settleEnd},
		{"gone", jobs.SettledGone, nil, &started, time.Hour, settleEnd},
		{"no answer, deadline ahead", "", down, &started, time.Hour, settleRetry},
		{"no answer, deadline passed", "", down, &started, 5 * time.Minute, settleExpired},
		{"no answer, never started", "", down, nil, 5 * time.Minute, settleRetry},
		{"finished past its deadline", jobs.SettledFinished, nil, &started, time.Minute, settleFollow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideSettle(tc.got, tc.err, tc.started, tc.deadline, now); got != tc.want {
				t.Errorf("decideSettle = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestStartOf: the deadline of a given-up Job counts from its start
// time when the spoke's was read, else from when a poll first saw it
// running plus the controller's slack, else it never started.
func TestStartOf(t *testing.T) {
	st := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	seen := st.Add(time.Second)
	for _, tc := range []struct {
		name string
		p    jobs.Progress
		want *time.Time
	}{
		{"start read", jobs.Progress{StartedAt: &st, SeenRunningAt: &seen}, &st},
		{"only seen running", jobs.Progress{SeenRunningAt: &seen}, ptrTime(seen.Add(startSlack))},
		{"never ran", jobs.Progress{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := startOf(tc.p)
			if (got == nil) != (tc.want == nil) || (got != nil && !got.Equal(*tc.want)) {
				t.Errorf("startOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// TestGivenUpJobSettles: a Job the follow gives up for an unreachable
// spoke is not reported ended: its update stays running and says it was
// given up; while the spoke does not answer nothing more is reported;
// when it answers that the Job finished, its real outcome is read and
// reported; when it answers that it deleted a running Job, the typed
// error ends it.
func TestGivenUpJobSettles(t *testing.T) {
	e := startJobsBroker(t, func(c *JobsConfig) { c.FollowOptions.PollInterval = 10 * time.Millisecond })
	e.runner.mu.Lock()
	e.runner.settles = make(chan settleAnswer, 4)
	e.runner.mu.Unlock()
	recv(t, e.hub.hellos, "hello")
	started := time.Now().Add(-time.Second)
	giveUp := jobs.Progress{State: api.JobStateError, Message: "spoke unreachable for 5m0s", StartedAt: &started, Unreachable: true,
		Error: &api.JobError{Status: "error", Cluster: "gpu", Tier: "public", Message: "spoke unreachable for 5m0s"}}

	run := func(id string) {
		t.Helper()
		var acc wire.JobAccepted
		if err := e.hub.call(wire.MethodJobRun, jobRun(id, "ab", "", "team-b"), &acc); err != nil {
			t.Fatal(err)
		}
		recv(t, e.runner.submits, "submit")
		recv(t, e.runner.follows, "follow")
		e.runner.ch(id) <- giveUp
		u := recv(t, e.hub.jobUpdates, "given-up update")
		if u.JobID != id || u.State != api.JobStateRunning || !strings.Contains(u.Message, "given up") || u.Error != nil || u.FinishedAt != nil {
			t.Fatalf("given-up update %+v; want running, saying given up, no error", u)
		}
	}

	run("fin")
	e.runner.settles <- settleAnswer{err: errors.New("dial tcp: i/o timeout")}
	e.runner.settles <- settleAnswer{got: jobs.SettledFinished}
	recv(t, e.runner.follows, "the follow that reads the outcome")
	code := 0
	e.runner.ch("fin") <- jobs.Progress{State: api.JobStateSucceeded, ExitCode: &code, Result: []byte(`{"ok":1}`)}
	if u := recv(t, e.hub.jobUpdates, "outcome"); u.State != api.JobStateSucceeded || string(u.Result) != `{"ok":1}` {
		t.Fatalf("outcome %+v; want its real end, succeeded", u)
	}

	run("del")
	e.runner.settles <- settleAnswer{got: jobs.SettledDeleted}
	u := recv(t, e.hub.jobUpdates, "end")
	if u.State != api.JobStateError || u.Error == nil || u.Error.Cluster != "gpu" || !strings.Contains(u.Message, "deleted from the spoke") {
		t.Fatalf("end %+v; want error, the typed error, deleted", u)
	}

	// Seen running but its start time never read (the cut came before the
	// Job controller set it), its 60 s deadline long past: the spoke has
	// stopped it, so the typed error ends it at once, without an answer.
	var acc wire.JobAccepted
	if err := e.hub.call(wire.MethodJobRun, jobRun("seen", "ab", "", "team-b"), &acc); err != nil {
		t.Fatal(err)
	}
	recv(t, e.runner.submits, "submit")
	recv(t, e.runner.follows, "follow")
	seen := time.Now().Add(-2 * time.Minute)
	noStart := giveUp
	noStart.StartedAt, noStart.SeenRunningAt = nil, &seen
	e.runner.ch("seen") <- noStart
	if u := recv(t, e.hub.jobUpdates, "end"); u.JobID != "seen" || u.State != api.JobStateError || u.Error == nil || u.Error.Tier != "public" {
		t.Fatalf("end %+v; want the typed error at once", u)
	}
}

// TestSpecForRunAs: the cluster block's run_as_user and run_as_group
// reach the Job's Spec (root, 0, included); the ambient cluster and a
// block naming none leave the runner's default.
func TestSpecForRunAs(t *testing.T) {
	root, gid := int64(0), int64(1000)
	run := jobRun("j1", "a1", "gpu", "")
	s := specFor(run, &connect.Spoke{Cluster: &fleet.Cluster{Name: "gpu", RunAsUser: &root, RunAsGroup: &gid}}, "b1")
	if s.RunAsUser == nil || *s.RunAsUser != 0 || s.RunAsGroup == nil || *s.RunAsGroup != 1000 {
		t.Errorf("spec %+v: want the block's IDs", s)
	}
	for _, sp := range []*connect.Spoke{{}, {Cluster: &fleet.Cluster{Name: "gpu"}}} {
		if s := specFor(run, sp, "b1"); s.RunAsUser != nil || s.RunAsGroup != nil {
			t.Errorf("spec %+v: want no IDs (the runner's default)", s)
		}
	}
}
