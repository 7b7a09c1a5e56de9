package runtimetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
)

// longGrace is a grace period a cooperative agent never needs: a Stop that
// takes anywhere near it means the polite request did not work.
const longGrace = 60 * time.Second

func (s *suite) testLifecycle(t *testing.T) {
	e := s.setup(t)
	spec := e.spec("life", false)

	st, err := e.rt.Create(e.ctx, spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if st.State != runtime.StateCreated || st.AgentID != spec.AgentID || st.RunID != spec.RunID {
		t.Fatalf("Create status = %+v, want created %s/%s", st, spec.AgentID, spec.RunID)
	}
	if got := e.inspect(spec.AgentID).State; got != runtime.StateCreated {
		t.Fatalf("Inspect after Create: state %q, want created (Create must not start)", got)
	}

	before := time.Now()
	st, err = e.rt.Start(e.ctx, spec.AgentID)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	st = e.untilRunning(spec.AgentID, st)
	if st.State != runtime.StateRunning {
		t.Fatalf("Start state = %q, want running", st.State)
	}
	if st.StartedAt.Before(before.Add(-time.Second)) {
		t.Errorf("StartedAt = %v, want about %v", st.StartedAt, before)
	}
	if e.process() {
		e.waitLog(spec.AgentID, marker(spec.AgentID))
	}
	if got := e.inspect(spec.AgentID); got.State != runtime.StateRunning || got.ExitCode != nil {
		t.Fatalf("Inspect running agent = %+v", got)
	}

	start := time.Now()
	st, err = e.rt.Stop(e.ctx, spec.AgentID, longGrace)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st.State != runtime.StateExited {
		t.Fatalf("Stop state = %q, want exited", st.State)
	}
	if took := time.Since(start); took > longGrace/2 {
		t.Errorf("Stop of a cooperative agent took %v: the polite stop did not work", took)
	}
	got := e.inspect(spec.AgentID)
	if got.State != runtime.StateExited {
		t.Fatalf("Inspect after Stop: state %q, want exited", got.State)
	}
	if !got.FinishedAt.IsZero() && got.FinishedAt.Before(got.StartedAt) {
		t.Errorf("FinishedAt %v before StartedAt %v", got.FinishedAt, got.StartedAt)
	}
	// Stop on a stopped agent is a no-op.
	if st, err := e.rt.Stop(e.ctx, spec.AgentID, time.Second); err != nil || st.State != runtime.StateExited {
		t.Fatalf("second Stop = %+v, %v; want exited, nil", st, err)
	}

	if err := e.rt.Delete(e.ctx, spec.AgentID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err = e.rt.Inspect(e.ctx, spec.AgentID)
	wantNotFound(t, "Inspect after Delete", err)
	wantNotFound(t, "second Delete", e.rt.Delete(e.ctx, spec.AgentID))
}

func (s *suite) testStartIdempotent(t *testing.T) {
	e := s.setup(t)
	spec := e.spec("idem", false)
	first := e.createStart(spec)

	// Concurrent Starts of a running agent must all be no-ops: a second
	// launch would show up as a new StartedAt and a second marker line.
	var wg sync.WaitGroup
	results := make([]runtime.Status, 5)
	errs := make([]error, len(results))
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.rt.Start(e.ctx, spec.AgentID)
		}()
	}
	wg.Wait()
	for i, st := range results {
		if errs[i] != nil {
			t.Fatalf("Start on running agent: %v", errs[i])
		}
		if st.State != runtime.StateRunning || !st.StartedAt.Equal(first.StartedAt) {
			t.Fatalf("Start on running agent = %s started %v, want running started %v",
				st.State, st.StartedAt, first.StartedAt)
		}
	}
	if e.process() {
		out, err := e.logs(spec.AgentID)
		if err != nil {
			t.Fatal(err)
		}
		if n := countLines(out, marker(spec.AgentID)); n != 1 {
			t.Fatalf("marker printed %d times, want 1 (agent started twice?): %s", n, quoteTail(out))
		}
	}

	// Starting an exited agent runs it again.
	if _, err := e.rt.Stop(e.ctx, spec.AgentID, longGrace); err != nil {
		t.Fatal(err)
	}
	st, err := e.rt.Start(e.ctx, spec.AgentID)
	if err == nil {
		st = e.untilRunning(spec.AgentID, st)
	}
	if err != nil || st.State != runtime.StateRunning {
		t.Fatalf("Start after Stop = %+v, %v; want running", st, err)
	}
	if st.ExitCode != nil {
		t.Errorf("restarted agent still reports exit code %d", *st.ExitCode)
	}
	if !e.process() {
		return
	}
	// The second run's marker follows the first's, or, where each Start
	// runs a new container with a log of its own, stands alone.
	want := 2
	if s.opts.LogsPerStart {
		want = 1
	}
	e.waitFor("second marker", func() (bool, string) {
		out, err := e.logs(spec.AgentID)
		return err == nil && countLines(out, marker(spec.AgentID)) == want, quoteTail(out)
	})
}

func (s *suite) testCreateDuplicate(t *testing.T) {
	e := s.setup(t)
	spec := e.spec("dup", false)
	e.createStart(spec)
	if _, err := e.rt.Create(e.ctx, spec); err == nil {
		t.Fatal("second Create of the same agent succeeded, want an error")
	}
	if got := e.inspect(spec.AgentID); got.State != runtime.StateRunning {
		t.Fatalf("after failed duplicate Create: state %q, want running (untouched)", got.State)
	}
	if _, err := e.rt.Create(e.ctx, runtime.Spec{}); err == nil {
		t.Error("Create with an empty AgentID succeeded, want an error")
	}
}

func (s *suite) testStopGraceThenKill(t *testing.T) {
	s.needProcess(t)
	e := s.setup(t)
	spec := e.spec("stubborn", true)
	e.createStart(spec)

	const grace = time.Second
	start := time.Now()
	st, err := e.rt.Stop(e.ctx, spec.AgentID, grace)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st.State != runtime.StateExited {
		t.Fatalf("Stop state = %q, want exited (killed after grace)", st.State)
	}
	if took < grace {
		t.Errorf("Stop returned after %v, before the %v grace period: the agent ignores SIGTERM", took, grace)
	}
	if st.ExitCode != nil && *st.ExitCode == 0 {
		t.Errorf("killed agent reports exit code 0")
	}
	if got := e.inspect(spec.AgentID).State; got != runtime.StateExited {
		t.Fatalf("Inspect after kill: state %q, want exited", got)
	}
	// Stopping it again is a no-op: no second grace period.
	start = time.Now()
	if st, err := e.rt.Stop(e.ctx, spec.AgentID, longGrace); err != nil || st.State != runtime.StateExited {
		t.Fatalf("second Stop = %+v, %v; want exited", st, err)
	}
	if took := time.Since(start); took > longGrace/2 {
		t.Errorf("Stop of an exited agent took %v", took)
	}
}

func (s *suite) testDeleteRunning(t *testing.T) {
	e := s.setup(t)
	spec := e.spec("delrun", false)
	e.createStart(spec)
	if err := e.rt.Delete(e.ctx, spec.AgentID); err != nil {
		t.Fatalf("Delete of a running agent: %v", err)
	}
	_, err := e.rt.Inspect(e.ctx, spec.AgentID)
	wantNotFound(t, "Inspect after Delete", err)
	inv, err := e.rt.Inventory(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range inv {
		if st.AgentID == spec.AgentID {
			t.Fatalf("deleted agent still in inventory: %+v", st)
		}
	}
	// The ID is free again.
	e.createStart(spec)
}

func (s *suite) testNotFound(t *testing.T) {
	e := s.setup(t)
	const id = "rtt-no-such-agent"
	ctx := e.ctx
	_, err := e.rt.Start(ctx, id)
	wantNotFound(t, "Start", err)
	_, err = e.rt.Stop(ctx, id, time.Second)
	wantNotFound(t, "Stop", err)
	_, err = e.rt.Suspend(ctx, id)
	wantNotFound(t, "Suspend", err)
	_, err = e.rt.Resume(ctx, id)
	wantNotFound(t, "Resume", err)
	wantNotFound(t, "Delete", e.rt.Delete(ctx, id))
	_, err = e.rt.Inspect(ctx, id)
	wantNotFound(t, "Inspect", err)
	_, err = e.rt.Logs(ctx, id, false)
	wantNotFound(t, "Logs", err)
	_, err = e.rt.Logs(ctx, id, true)
	wantNotFound(t, "Logs follow", err)
	// IDs that could escape a runtime's state directory are simply unknown.
	for _, bad := range []string{"..", ".", "../x", "a/b"} {
		_, err = e.rt.Inspect(ctx, bad)
		wantNotFound(t, "Inspect "+bad, err)
	}
}

func (s *suite) testSuspendResume(t *testing.T) {
	if !s.opts.SupportsSuspend {
		t.Skip("runtime does not support suspend")
	}
	e := s.setup(t)
	spec := e.spec("pause", false)
	e.createStart(spec)

	st, err := e.rt.Suspend(e.ctx, spec.AgentID)
	if err != nil || st.State != runtime.StatePaused {
		t.Fatalf("Suspend = %+v, %v; want paused", st, err)
	}
	if got := e.inspect(spec.AgentID).State; got != runtime.StatePaused {
		t.Fatalf("Inspect after Suspend: %q, want paused", got)
	}
	if st, err := e.rt.Suspend(e.ctx, spec.AgentID); err != nil || st.State != runtime.StatePaused {
		t.Fatalf("second Suspend = %+v, %v; want paused no-op", st, err)
	}
	st, err = e.rt.Resume(e.ctx, spec.AgentID)
	if err != nil || st.State != runtime.StateRunning {
		t.Fatalf("Resume = %+v, %v; want running", st, err)
	}
	if st, err := e.rt.Resume(e.ctx, spec.AgentID); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("second Resume = %+v, %v; want running no-op", st, err)
	}

	// A paused agent can still be stopped, politely.
	if _, err := e.rt.Suspend(e.ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err = e.rt.Stop(e.ctx, spec.AgentID, longGrace)
	if err != nil || st.State != runtime.StateExited {
		t.Fatalf("Stop of paused agent = %+v, %v; want exited", st, err)
	}
	if took := time.Since(start); took > longGrace/2 {
		t.Errorf("Stop of a paused agent took %v: it was not resumed to see the stop request", took)
	}

	// Suspending something that is not running is an error.
	if _, err := e.rt.Suspend(e.ctx, spec.AgentID); err == nil {
		t.Error("Suspend of an exited agent succeeded, want an error")
	}
}

func (s *suite) testClose(t *testing.T) {
	e := s.setup(t)
	events := e.rt.Events()
	if err := e.rt.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if events != nil {
		select {
		case <-drainUntilClosed(events):
		case <-time.After(s.opts.Timeout):
			t.Fatal("Events channel not closed by Close")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	if _, err := e.rt.Create(ctx, e.spec("closed", false)); err == nil {
		t.Error("Create after Close succeeded, want an error")
	}
}

// drainUntilClosed returns a channel closed once events is closed,
// discarding whatever was still queued.
func drainUntilClosed(events <-chan runtime.Event) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range events {
		}
		close(done)
	}()
	return done
}
