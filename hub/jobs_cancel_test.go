package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/wire"
)

// runningJob runs a Job for agent a on jb and has jb report it running.
func runningJob(t *testing.T, e *testenv.Env, jb *jobsBroker, a *api.Agent) *api.Job {
	t.Helper()
	j, err := e.Admin.RunJob(context.Background(), a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateRunning, Message: "pod running"}); err != nil {
		t.Fatal(err)
	}
	return j
}

func (jb *jobsBroker) gotCalls() []string {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return slices.Clone(jb.calls)
}

func jobState(t *testing.T, e *testenv.Env, id string, want api.JobState) error {
	t.Helper()
	j, err := e.Admin.GetJob(context.Background(), id)
	if err != nil {
		return err
	}
	if j.State != want {
		return fmt.Errorf("job %s is %s (%s), want %s", id, j.State, j.Message, want)
	}
	return nil
}

// TestJobCancelQueuedForOfflineBroker: a cancel of a Job whose broker is
// offline is queued like an offline stop: the Job reads cancelling (a
// second cancel answers the same, nothing queued twice), and when the
// broker reconnects the queue delivers its dispatches in order (the stop
// queued first, then the job.cancel), the broker reports the Job
// cancelled, and the Job ends cancelled. On both store engines.
func TestJobCancelQueuedForOfflineBroker(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		testJobCancelQueuedForOfflineBroker(t, testenv.New(t, testenv.Options{Postgres: pg}))
	})
}

func testJobCancelQueuedForOfflineBroker(t *testing.T, e *testenv.Env) {
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	other := startOn(t, e.Admin, jb, "other")
	j := runningJob(t, e, jb, a)

	_ = jb.conn.Close("going away")
	e.WaitBrokerStatus(jb.creds.BrokerID, api.BrokerOffline)
	if _, err := e.Admin.AgentAction(ctx, other.ID, "", "stop"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, err := e.Admin.CancelJob(ctx, j.ID)
		if err != nil {
			t.Fatalf("cancel %d with the broker offline: %v", i+1, err)
		}
		if got.State != api.JobStateCancelling || !strings.Contains(got.Message, "cancel queued") || !strings.Contains(got.Message, "offline") {
			t.Fatalf("cancel %d with the broker offline: %s %q; want cancelling, saying the cancel is queued", i+1, got.State, got.Message)
		}
	}
	if err := jobState(t, e, j.ID, api.JobStateCancelling); err != nil {
		t.Fatal(err)
	}

	jb.mu.Lock()
	jb.cancelReports = true
	jb.inventory = []wire.AgentStatus{
		{AgentID: a.ID, RunID: a.RunID, ProjectID: a.ProjectID, State: api.ContainerRunning, ObservedAt: time.Now().UnixNano()},
		{AgentID: other.ID, RunID: other.RunID, ProjectID: other.ProjectID, State: api.ContainerRunning, ObservedAt: time.Now().UnixNano()},
	}
	jb.mu.Unlock()
	jb.connect(t, e, nil)
	wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error { return jobState(t, e, j.ID, api.JobStateCancelled) })
	want := []string{wire.MethodAgentStop + " " + other.ID, wire.MethodJobCancel + " " + j.ID}
	if got := jb.gotCalls(); !slices.Equal(got, want) {
		t.Fatalf("the reconnected broker got %q, want %q (the queue in order, each once)", got, want)
	}
}

// TestJobCancelUnansweredIsQueued: a broker that is connected but never
// answers job.cancel (frozen) holds the cancel for a bounded wait only;
// then it is queued and the Job reads cancelling, also through the
// broker's progress reports. When the broker reconnects the cancel is
// delivered again, and its cancelled report ends the Job.
func TestJobCancelUnansweredIsQueued(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	e.Hub.SetJobCancelTimeout(300 * time.Millisecond)
	jb := newJobsBroker(t, e, "frozen-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	j := runningJob(t, e, jb, a)
	hang := make(chan struct{})
	jb.mu.Lock()
	jb.cancelHang = hang
	jb.mu.Unlock()

	start := time.Now()
	got, err := e.Admin.CancelJob(ctx, j.ID)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("cancel to a broker that does not answer: %v", err)
	}
	if got.State != api.JobStateCancelling || !strings.Contains(got.Message, "did not answer") {
		t.Fatalf("cancel to a broker that does not answer: %s %q; want cancelling, saying it is queued", got.State, got.Message)
	}
	if took > 3*time.Second {
		t.Fatalf("the cancel took %s; want it queued after the bounded wait (300ms)", took)
	}
	// The broker's progress does not undo the cancel.
	if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateRunning, Message: "still running"}); err != nil {
		t.Fatal(err)
	}
	if cur, err := e.Admin.GetJob(ctx, j.ID); err != nil || cur.State != api.JobStateCancelling || !strings.Contains(cur.Message, "cancel queued") {
		t.Fatalf("after a running report: %+v (%v); want still cancelling", cur, err)
	}

	close(hang)
	jb.mu.Lock()
	jb.cancelHang, jb.cancelReports = nil, true
	jb.inventory = []wire.AgentStatus{{AgentID: a.ID, RunID: a.RunID, ProjectID: a.ProjectID, State: api.ContainerRunning, ObservedAt: time.Now().UnixNano()}}
	jb.mu.Unlock()
	_ = jb.conn.Close("thawed, reconnecting")
	e.WaitBrokerStatus(jb.creds.BrokerID, api.BrokerOffline)
	jb.connect(t, e, nil)
	wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error { return jobState(t, e, j.ID, api.JobStateCancelled) })
	// (A resend on the first session may come in between: the broker runs
	// a cancel once however often it is sent.)
	if got := jb.gotCalls(); len(got) < 2 || got[len(got)-1] != wire.MethodJobCancel+" "+j.ID {
		t.Fatalf("the broker got %q; want the cancel it left unanswered, then the queued one", got)
	}
}

// TestJobCancellingEndsWhenItsBrokerIsDeregistered: a Job whose queued
// cancel its broker never confirmed ends cancelled, with the reason, once
// the broker is deregistered; a cancel of a live Job of a deregistered
// broker ends it the same way. On both store engines.
func TestJobCancellingEndsWhenItsBrokerIsDeregistered(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		testJobCancellingEndsWhenItsBrokerIsDeregistered(t, testenv.New(t, testenv.Options{Postgres: pg}))
	})
}

func testJobCancellingEndsWhenItsBrokerIsDeregistered(t *testing.T, e *testenv.Env) {
	ctx := context.Background()
	jb := newJobsBroker(t, e, "gone-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	j := runningJob(t, e, jb, a)
	j2 := runningJob(t, e, jb, a)
	_ = jb.conn.Close("going away")
	e.WaitBrokerStatus(jb.creds.BrokerID, api.BrokerOffline)
	if got, err := e.Admin.CancelJob(ctx, j.ID); err != nil || got.State != api.JobStateCancelling {
		t.Fatalf("cancel with the broker offline: %+v %v", got, err)
	}
	if err := e.Admin.ForceDeregisterBroker(ctx, jb.creds.BrokerID); err != nil {
		t.Fatal(err)
	}
	got, err := e.Admin.GetJob(ctx, j.ID)
	if err != nil || got.State != api.JobStateCancelled || !strings.Contains(got.Message, "deregistered") || got.FinishedAt == nil {
		t.Fatalf("the cancelling job after its broker's deregistration: %+v (%v); want cancelled, saying why", got, err)
	}
	got, err = e.Admin.CancelJob(ctx, j2.ID)
	if err != nil || got.State != api.JobStateCancelled || !strings.Contains(got.Message, "deregistered") {
		t.Fatalf("cancel of a job of a deregistered broker: %+v (%v); want cancelled, saying why", got, err)
	}
}

// TestJobCancelUnansweredResentOnTheSameSession: a broker that stays
// connected after leaving a cancel unanswered says no hello that would
// drain the queue; the queued cancel is sent again on its session after
// a while, and its cancelled report ends the Job with no reconnect.
func TestJobCancelUnansweredResentOnTheSameSession(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	e.Hub.SetJobCancelTimeout(200 * time.Millisecond) // resent after 600ms
	jb := newJobsBroker(t, e, "busy-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	j := runningJob(t, e, jb, a)
	hang := make(chan struct{})
	jb.mu.Lock()
	jb.cancelHang = hang
	jb.mu.Unlock()
	if got, err := e.Admin.CancelJob(ctx, j.ID); err != nil || got.State != api.JobStateCancelling {
		t.Fatalf("cancel to a broker that does not answer: %+v %v", got, err)
	}
	jb.mu.Lock()
	jb.cancelHang, jb.cancelReports = nil, true
	jb.mu.Unlock()
	close(hang)
	wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error { return jobState(t, e, j.ID, api.JobStateCancelled) })
	if got := jb.gotCalls(); len(got) != 2 {
		t.Fatalf("the broker got %q; want the unanswered cancel, then the same one again", got)
	}
}
