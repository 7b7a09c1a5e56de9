package runtimetest

import (
	"context"
	"errors"
	"io"
	"testing"
)

func (s *suite) testLogs(t *testing.T) {
	e := s.setup(t)
	spec := e.spec("logs", false)
	if _, err := e.rt.Create(e.ctx, spec); err != nil {
		t.Fatal(err)
	}
	// A created agent has no output yet, and following it ends at once.
	if out, err := e.logs(spec.AgentID); err != nil || out != "" {
		t.Fatalf("Logs of created agent = %q, %v; want empty", out, err)
	}
	r, err := e.rt.Logs(e.ctx, spec.AgentID, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := newStream(r).waitEnd(t, s.opts.Timeout); !errors.Is(err, io.EOF) {
		t.Fatalf("follow of a created agent ended with %v, want io.EOF", err)
	}
	r.Close()
	s.needProcess(t)
	if _, err := e.rt.Start(e.ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	out := e.waitLog(spec.AgentID, marker(spec.AgentID))
	if n := countLines(out, marker(spec.AgentID)); n != 1 {
		t.Fatalf("marker appears %d times, want 1: %s", n, quoteTail(out))
	}

	// Output survives the agent's exit.
	s.opts.Finish(t, e.rt, spec, 0)
	e.waitState(spec.AgentID, "exited")
	out = e.waitLog(spec.AgentID, finishedLine(spec.AgentID))
	if countLines(out, marker(spec.AgentID)) != 1 {
		t.Fatalf("output after exit lost the marker: %s", quoteTail(out))
	}

	// A runtime that cuts the log's tail itself (scion logs --tail N)
	// returns exactly the last lines.
	if tl, ok := e.rt.(tailLogger); ok {
		r, err := tl.LogsTail(e.ctx, spec.AgentID, false, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), finishedLine(spec.AgentID)+"\n"; got != want {
			t.Fatalf("LogsTail(1) = %q, want %q", got, want)
		}
	}
}

// tailLogger is the optional capability of starting a log at its last
// lines (the broker's logs --tail uses it where a runtime has it).
type tailLogger interface {
	LogsTail(ctx context.Context, agentID string, follow bool, tail int) (io.ReadCloser, error)
}

func (s *suite) testLogsFollow(t *testing.T) {
	s.needProcess(t)
	e := s.setup(t)
	spec := e.spec("follow", false)
	e.createStart(spec)

	r, err := e.rt.Logs(e.ctx, spec.AgentID, true)
	if err != nil {
		t.Fatalf("Logs follow: %v", err)
	}
	defer r.Close()
	st := newStream(r)
	st.waitLine(t, marker(spec.AgentID), s.opts.Timeout)

	// Output written after the reader caught up still arrives, and the
	// reader ends by itself once the agent has exited.
	s.opts.Finish(t, e.rt, spec, 3)
	st.waitLine(t, finishedLine(spec.AgentID), s.opts.Timeout)
	if err := st.waitEnd(t, s.opts.Timeout); !errors.Is(err, io.EOF) {
		t.Fatalf("follow ended with %v, want io.EOF after the agent exited", err)
	}
	got := e.waitState(spec.AgentID, "exited")
	if got.ExitCode == nil || *got.ExitCode != 3 {
		t.Fatalf("exit code = %v, want 3", fmtCode(got.ExitCode))
	}

	// Following an exited agent returns what it wrote and ends.
	r2, err := e.rt.Logs(e.ctx, spec.AgentID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	st2 := newStream(r2)
	if err := st2.waitEnd(t, s.opts.Timeout); !errors.Is(err, io.EOF) {
		t.Fatalf("follow of exited agent ended with %v, want io.EOF", err)
	}
	if countLines(st2.output(), finishedLine(spec.AgentID)) != 1 {
		t.Fatalf("follow of exited agent = %s, want its whole output", quoteTail(st2.output()))
	}
}

func (s *suite) testLogsFollowCancel(t *testing.T) {
	s.needProcess(t)
	e := s.setup(t)
	spec := e.spec("followcancel", false)
	e.createStart(spec)

	// Cancelling the context ends a follow on a still-running agent.
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	r, err := e.rt.Logs(ctx, spec.AgentID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := newStream(r)
	st.waitLine(t, marker(spec.AgentID), s.opts.Timeout)
	cancel()
	if err := st.waitEnd(t, s.opts.Timeout); err == nil {
		t.Fatal("follow ended without an error after its context was cancelled")
	}

	// So does closing the reader while a Read is blocked in it.
	r2, err := e.rt.Logs(e.ctx, spec.AgentID, true)
	if err != nil {
		t.Fatal(err)
	}
	st2 := newStream(r2)
	st2.waitLine(t, marker(spec.AgentID), s.opts.Timeout)
	if err := r2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st2.waitEnd(t, s.opts.Timeout); err == nil {
		t.Fatal("blocked Read returned nil error after Close")
	}

	// And deleting the agent ends it too.
	r3, err := e.rt.Logs(e.ctx, spec.AgentID, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	st3 := newStream(r3)
	st3.waitLine(t, marker(spec.AgentID), s.opts.Timeout)
	if err := e.rt.Delete(e.ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	st3.waitEnd(t, s.opts.Timeout)
}
