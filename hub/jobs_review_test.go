package hub_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

func (jb *jobsBroker) gotCancels() []string {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return append([]string(nil), jb.cancels...)
}

func waitCancel(t *testing.T, jb *jobsBroker, id string) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !slices.Contains(jb.gotCancels(), id) {
			return fmt.Errorf("no job.cancel of %s; got %v", id, jb.gotCancels())
		}
		return nil
	})
}

// TestJobLostAnswerLiveJobIsCancelled: a run whose answer the Hub lost
// is error in the ledger; when its broker then reports the Job alive (it
// had accepted and submitted it), the update is still refused, and the
// Hub has the broker delete it, since nobody can cancel a Job the ledger
// calls finished and it would hold its GPUs to its deadline.
func TestJobLostAnswerLiveJobIsCancelled(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		e.Hub.SetJobRunTimeout(500 * time.Millisecond)
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-b", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		release := make(chan struct{})
		jb.setRun(func(r wire.JobRun) (any, error) {
			<-release
			return wire.JobAccepted{Cluster: "h200", Tier: "public", Namespace: "ns", Name: "scion-job-x"}, nil
		})
		_, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
		apiErr(t, err, http.StatusGatewayTimeout, api.CodeBrokerTimeout)
		close(release)
		id := jb.gotRuns()[0].Job.ID
		if got, err := e.Admin.GetJob(ctx, id); err != nil || got.State != api.JobStateError {
			t.Fatalf("unanswered run: %+v %v", got, err)
		}
		apiErr(t, jb.update(t, wire.JobUpdate{JobID: id, State: api.JobStateRunning, Message: "pod running"}), http.StatusConflict, api.CodeInvalidPhase)
		waitCancel(t, jb, id)
		if got, _ := e.Admin.GetJob(ctx, id); got.State != api.JobStateError {
			t.Fatalf("the ledger changed: %+v", got)
		}
	})
}

// TestJobCancelWhileRunUnanswered: a cancel while the broker has not yet
// answered the run (it is fetching the cluster's secrets) ends the Job in
// the ledger at once; when the broker then accepts, the Hub sends it
// job.cancel, and the run's caller sees the cancelled Job.
func TestJobCancelWhileRunUnanswered(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-b", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		release := make(chan struct{})
		jb.setRun(func(r wire.JobRun) (any, error) {
			<-release
			return wire.JobAccepted{Cluster: "h200", Tier: "public", Namespace: "ns", Name: "scion-job-x"}, nil
		})
		type res struct {
			j   *api.Job
			err error
		}
		done := make(chan res, 1)
		go func() {
			j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
			done <- res{j, err}
		}()
		wait.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
			if len(jb.gotRuns()) == 0 {
				return errors.New("no job.run yet")
			}
			return nil
		})
		id := jb.gotRuns()[0].Job.ID
		got, err := e.Admin.CancelJob(ctx, id)
		if err != nil || got.State != api.JobStateCancelled {
			t.Fatalf("cancel of an unanswered run: %+v %v", got, err)
		}
		if c := jb.gotCancels(); len(c) != 0 {
			t.Fatalf("job.cancel sent before the broker knew the Job: %v", c)
		}
		close(release)
		r := <-done
		if r.err != nil || r.j.State != api.JobStateCancelled || r.j.Name != "scion-job-x" {
			t.Fatalf("the run's answer: %+v %v", r.j, r.err)
		}
		waitCancel(t, jb, id)
		// The broker's own cancelled report is the state it has.
		if err := jb.update(t, wire.JobUpdate{JobID: id, State: api.JobStateCancelled}); err != nil {
			t.Fatal(err)
		}
		if got, err := e.Admin.CancelJob(ctx, id); err != nil || got.State != api.JobStateCancelled {
			t.Fatalf("cancel again: %+v %v", got, err)
		}
	})
}

// TestPendingJobsExpireWhileRunning: a run lost by a Hub that was
// killed and restarted within pendingJobTTL (too young to expire at
// start) is expired by the running Hub later, not left pending for
// ever; an accepted Job still pending (its broker's first report slow)
// is left alone.
func TestPendingJobsExpireWhileRunning(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	lost, accepted, neverSubmitted := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	for _, r := range []struct {
		id, name string
		at       time.Time
	}{{lost, "", now.Add(-10 * time.Minute)}, {accepted, "scion-job-a", now.Add(-10 * time.Minute)}, {neverSubmitted, "scion-job-b", now.Add(-2 * time.Hour)}} {
		if err := e.Store.CreateJob(ctx, &store.Job{ID: r.id, ProjectID: e.ProjectID, AgentID: uuid.NewString(), BrokerID: uuid.NewString(),
			Cluster: "b200", Name: r.name, Image: "busybox", Command: []string{"true"}, DeadlineSeconds: 60, State: api.JobStatePending,
			CreatedBy: "user:x", CreatedAt: r.at, UpdatedAt: r.at}); err != nil {
			t.Fatal(err)
		}
	}
	e.Hub.SetPendingJobSweep(20 * time.Millisecond)
	// A run lost before its answer; an accepted one its broker never
	// reported (the broker killed before it submitted the Job) after
	// long enough.
	for _, id := range []string{lost, neverSubmitted} {
		wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
			got, err := e.Admin.GetJob(ctx, id)
			if err != nil {
				return err
			}
			if got.State != api.JobStateError || got.Error == nil || got.FinishedAt == nil {
				return fmt.Errorf("lost run is %s", got.State)
			}
			return nil
		})
	}
	if got, err := e.Admin.GetJob(ctx, accepted); err != nil || got.State != api.JobStatePending {
		t.Fatalf("an accepted pending job: %+v %v", got, err)
	}
}

// TestJobMetricsClusterBounded: the cluster of a run is the caller's
// word until a broker accepts a Job on it; refused guesses must not each
// make a scion_jobs_total series.
func TestJobMetricsClusterBounded(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	self := client.New(e.URL, jb.token(a.ID))
	jb.setRun(func(r wire.JobRun) (any, error) {
		return nil, api.NotFound(api.CodeClusterNotFound, "no cluster %s", r.Job.Cluster)
	})
	for i := range 20 {
		req := jobReq
		req.Cluster = fmt.Sprintf("guess-%d", i)
		_, err := self.RunJob(ctx, a.ID, "", req)
		apiErr(t, err, http.StatusNotFound, api.CodeClusterNotFound)
	}
	m := metricsText(t, e)
	if strings.Contains(m, "guess-") {
		t.Fatalf("refused cluster names became metric labels:\n%s", grepLines(m, "scion_jobs_total"))
	}
	if !strings.Contains(m, `scion_jobs_total{cluster="(unknown)",outcome="refused"} 20`) {
		t.Fatalf("refusals not counted:\n%s", grepLines(m, "scion_jobs_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestJobCancelOfAJobItsBrokerLost: a cancel its broker answers with
// job_not_found (it does not follow the Job: killed before it submitted
// it) ends the row, rather than answering the caller that its own Job
// does not exist and leaving the row live for ever; should the broker
// report the Job alive after all, it is cancelled on its spoke.
func TestJobCancelOfAJobItsBrokerLost(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	jb.mu.Lock()
	jb.cancelErr = api.NotFound(api.CodeJobNotFound, "job %s is not followed by runtime broker x", j.ID)
	jb.mu.Unlock()
	got, err := e.Admin.CancelJob(ctx, j.ID)
	if err != nil || got.State != api.JobStateCancelled || got.FinishedAt == nil {
		t.Fatalf("cancel of a job its broker lost: %+v %v", got, err)
	}
	jb.mu.Lock()
	jb.cancelErr = nil
	jb.mu.Unlock()
	apiErr(t, jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateRunning}), http.StatusConflict, api.CodeInvalidPhase)
	wait.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := len(jb.gotCancels()); n != 2 {
			return fmt.Errorf("%d job.cancel, want 2", n)
		}
		return nil
	})
}

// TestJobLostAnswerAfterItsReport: a run whose answer is lost but whose
// broker has already reported the Job (queued: it is on its spoke) is
// not overwritten with error (its next report would then find it
// finished and have it cancelled); the caller gets the Job as reported.
func TestJobLostAnswerAfterItsReport(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		e.Hub.SetJobRunTimeout(time.Second)
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-b", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		release := make(chan struct{})
		defer close(release)
		jb.setRun(func(r wire.JobRun) (any, error) { <-release; return nil, errors.New("late") })
		type res struct {
			j   *api.Job
			err error
		}
		done := make(chan res, 1)
		go func() {
			j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
			done <- res{j, err}
		}()
		wait.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
			if len(jb.gotRuns()) == 0 {
				return errors.New("no job.run yet")
			}
			return nil
		})
		id := jb.gotRuns()[0].Job.ID
		if err := jb.update(t, wire.JobUpdate{JobID: id, State: api.JobStateQueued, Message: "waiting for admission",
			Where: &wire.JobAccepted{Cluster: "h200", Tier: "bastion", Namespace: "ns", Name: "scion-job-x"}}); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil || r.j.ID != id || r.j.State != api.JobStateQueued || r.j.Cluster != "h200" || r.j.Tier != "bastion" || r.j.Name != "scion-job-x" {
			t.Fatalf("the run's answer: %+v %v", r.j, r.err)
		}
		if got, err := e.Admin.GetJob(ctx, id); err != nil || got.State != api.JobStateQueued {
			t.Fatalf("the reported job: %+v %v", got, err)
		}
		if err := jb.update(t, wire.JobUpdate{JobID: id, State: api.JobStateRunning}); err != nil {
			t.Fatalf("the next report: %v", err)
		}
		if c := jb.gotCancels(); len(c) != 0 {
			t.Fatalf("a live reported job was cancelled: %v", c)
		}
	})
}

// TestJobAcceptanceClippedOnRunes: a broker's over-long names are cut to
// the ledger's bounds on a rune boundary (a cut mid-rune is invalid UTF-8,
// which PostgreSQL's text refuses and a metric label panics on).
func TestJobAcceptanceClippedOnRunes(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-b", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		long := strings.Repeat("é", 200)
		jb.setRun(func(r wire.JobRun) (any, error) {
			return wire.JobAccepted{Cluster: long, Tier: long, Namespace: long, Name: long}, nil
		})
		j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{j.Cluster, j.Tier, j.Namespace, j.Name} {
			if !utf8.ValidString(s) || s == "" {
				t.Fatalf("a clipped name is not valid UTF-8: %q", s)
			}
		}
		if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateFailed}); err != nil {
			t.Fatalf("the final report: %v", err)
		}
		if m := metricsText(t, e); !strings.Contains(m, `scion_jobs_total{cluster="(unknown)",outcome="failed"} 1`) {
			t.Fatalf("a cluster name no DNS label became a label:\n%s", grepLines(m, "scion_jobs_total"))
		}
	})
}

// TestJobUpdateOddBytes: a pod's result line and message with bytes that
// are not UTF-8 (a pod writes what it likes) are recorded on both
// engines, not refused by the store for ever (the broker resends a
// refused-by-5xx update every second and the Job never ends).
func TestJobUpdateOddBytes(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-b", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
		if err != nil {
			t.Fatal(err)
		}
		logs := "a\x00b\xffc\n"
		if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateSucceeded, Message: "m\xff\x00",
			Result: []byte("{\"v\":\"\xff\\u0000\"}"), Logs: &logs}); err != nil {
			t.Fatalf("update: %v", err)
		}
		got, err := e.Admin.GetJob(ctx, j.ID)
		if err != nil || got.State != api.JobStateSucceeded {
			t.Fatalf("%+v %v", got, err)
		}
	})
}

// TestJobWithoutRowIsCancelled: a Job its broker reports alive whose
// row is gone (its project deleted, the ledger going with it) is
// cancelled on its spoke: nobody could reach it any more, and it would
// run to its deadline.
func TestJobWithoutRowIsCancelled(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.DeleteJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	apiErr(t, jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateRunning}), http.StatusNotFound, api.CodeJobNotFound)
	waitCancel(t, jb, j.ID)
	// A final report of a Job without a row has nothing left to stop.
	gone := uuid.Must(uuid.NewV7()).String()
	apiErr(t, jb.update(t, wire.JobUpdate{JobID: gone, State: api.JobStateSucceeded}), http.StatusNotFound, api.CodeJobNotFound)
	wait.Consistently(t, 200*time.Millisecond, 20*time.Millisecond, func() error {
		if slices.Contains(jb.gotCancels(), gone) {
			return errors.New("job.cancel of a finished job without a row")
		}
		return nil
	})
}

// TestAgentDeleteCancelsItsJobs: deleting an agent ends its live Jobs
// in the ledger and has their broker delete them on the spoke (nobody is
// left to read their results, and a GPU Job would hold its spoke to its
// deadline); its finished Jobs stay as they were.
func TestAgentDeleteCancelsItsJobs(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	done, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	if err := jb.update(t, wire.JobUpdate{JobID: done.ID, State: api.JobStateSucceeded, ExitCode: &code}); err != nil {
		t.Fatal(err)
	}
	live, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	if err := jb.update(t, wire.JobUpdate{JobID: live.ID, State: api.JobStateRunning}); err != nil {
		t.Fatal(err)
	}
	if err := e.Admin.DeleteAgent(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	waitCancel(t, jb, live.ID)
	got, err := e.Store.GetJob(ctx, live.ID)
	if err != nil || got.State != api.JobStateCancelled || got.Message != "cancelled: its agent was deleted" {
		t.Fatalf("live job after its agent's delete: %+v %v", got, err)
	}
	if old, err := e.Store.GetJob(ctx, done.ID); err != nil || old.State != api.JobStateSucceeded {
		t.Fatalf("finished job: %+v %v", old, err)
	}
	if slices.Contains(jb.gotCancels(), done.ID) {
		t.Fatal("a finished job was cancelled")
	}
}

// TestJobQueueFromTheBroker: a Job that names no queue waits in its
// cluster block's default one, which only the broker knows; the ledger
// names it (job show said "Queue: -" while the Job carried the label),
// from the run's answer or, when that was lost, from a report. A queue
// the caller named stays, and a broker's bad name is not stored.
func TestJobQueueFromTheBroker(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-q", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		answer := func(queue string) {
			jb.setRun(func(r wire.JobRun) (any, error) {
				return wire.JobAccepted{Cluster: "h200", Tier: "public", Namespace: "ns", Name: "scion-job-" + r.Job.ID[:8], Queue: queue}, nil
			})
		}
		answer("h200-default")
		j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
		if err != nil || j.Queue != "h200-default" {
			t.Fatalf("the run's answer: %+v %v", j, err)
		}
		if got, err := e.Admin.GetJob(ctx, j.ID); err != nil || got.Queue != "h200-default" {
			t.Fatalf("the ledger row: %+v %v", got, err)
		}
		named := jobReq
		named.Queue = "mine"
		if j, err := e.Admin.RunJob(ctx, a.ID, "", named); err != nil || j.Queue != "mine" {
			t.Fatalf("a queue the caller named: %+v %v", j, err)
		}
		answer("Not A Queue!")
		if j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq); err != nil || j.Queue != "" {
			t.Fatalf("a bad queue name from the broker: %+v %v", j, err)
		}

		// The answer lost: the first report says where, queue included.
		release := make(chan struct{})
		defer close(release)
		jb.setRun(func(r wire.JobRun) (any, error) { <-release; return nil, errors.New("late") })
		done := make(chan *api.Job, 1)
		go func() { j, _ := e.Admin.RunJob(ctx, a.ID, "", jobReq); done <- j }()
		var id string
		wait.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
			runs := jb.gotRuns()
			if len(runs) < 4 {
				return errors.New("no job.run yet")
			}
			id = runs[len(runs)-1].Job.ID
			return nil
		})
		if err := jb.update(t, wire.JobUpdate{JobID: id, State: api.JobStateQueued,
			Where: &wire.JobAccepted{Cluster: "h200", Tier: "public", Namespace: "ns", Name: "scion-job-x", Queue: "h200-default"}}); err != nil {
			t.Fatal(err)
		}
		if got, err := e.Admin.GetJob(ctx, id); err != nil || got.Queue != "h200-default" {
			t.Fatalf("the reported job: %+v %v", got, err)
		}
	})
}
