package runtimetest

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
)

// pollInterval is how often conditions are re-checked. Short enough that a
// passing test barely waits, long enough not to burn a loaded CPU.
const pollInterval = 20 * time.Millisecond

// waitFor polls cond until it reports true, failing t after the suite's
// timeout with the last description cond gave.
func (e *env) waitFor(what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(e.s.opts.Timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %v waiting for %s (last: %s)", e.s.opts.Timeout, what, last)
		}
		time.Sleep(pollInterval)
	}
}

func (e *env) inspect(id string) runtime.Status {
	e.t.Helper()
	st, err := e.rt.Inspect(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Inspect(%s): %v", id, err)
	}
	return st
}

func (e *env) waitState(id, state string) runtime.Status {
	e.t.Helper()
	var st runtime.Status
	e.waitFor(id+" to be "+state, func() (bool, string) {
		var err error
		st, err = e.rt.Inspect(e.ctx, id)
		if err != nil {
			return false, err.Error()
		}
		return st.State == state, "state " + st.State
	})
	return st
}

// untilRunning is st, the answer of a Start, once the agent runs: a
// runtime that brings agents up asynchronously answers pending (a pod on
// its way to a node) and runs them later, which Inspect then tells.
// Any other state is returned as it is, for the caller to judge.
func (e *env) untilRunning(id string, st runtime.Status) runtime.Status {
	e.t.Helper()
	if st.State != runtime.StatePending {
		return st
	}
	return e.waitState(id, runtime.StateRunning)
}

// logs returns the agent's output so far (non-follow).
func (e *env) logs(id string) (string, error) {
	r, err := e.rt.Logs(e.ctx, id, false)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

// waitLog waits until the agent's (non-follow) output contains line as a
// whole line.
func (e *env) waitLog(id, line string) string {
	e.t.Helper()
	var out string
	e.waitFor(id+" to log "+line, func() (bool, string) {
		var err error
		out, err = e.logs(id)
		if err != nil {
			return false, err.Error()
		}
		return countLines(out, line) > 0, "output " + quoteTail(out)
	})
	return out
}

// countLines counts the lines of out equal to line.
func countLines(out, line string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			n++
		}
	}
	return n
}

func quoteTail(s string) string {
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return "\"" + s + "\""
}

// createStart creates and starts an agent from spec and waits until it has
// printed its marker, i.e. until it is really up (when it can run at all:
// see Options.NoProcess).
func (e *env) createStart(spec runtime.Spec) runtime.Status {
	e.t.Helper()
	if _, err := e.rt.Create(e.ctx, spec); err != nil {
		e.t.Fatalf("Create(%s): %v", spec.AgentID, err)
	}
	st, err := e.rt.Start(e.ctx, spec.AgentID)
	if err != nil {
		e.t.Fatalf("Start(%s): %v", spec.AgentID, err)
	}
	st = e.untilRunning(spec.AgentID, st)
	if st.State != runtime.StateRunning {
		e.t.Fatalf("Start(%s) state = %q, want running", spec.AgentID, st.State)
	}
	if e.process() {
		e.waitLog(spec.AgentID, marker(spec.AgentID))
	}
	return st
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("%s: err = %v, want ErrNotFound", what, err)
	}
}

// stream reads a follow-mode log reader in the background so that a test
// can wait for output (or its end) with a deadline, since a blocked Read
// cannot be given one. The reader goroutine never blocks on the test, so it
// exits as soon as the reader ends even if nobody is waiting any more.
type stream struct {
	notify chan struct{} // poked after every chunk
	done   chan struct{} // closed when Read returned an error

	mu  sync.Mutex
	buf bytes.Buffer
	err error
}

func newStream(r io.Reader) *stream {
	s := &stream{notify: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			if err != nil {
				s.err = err
			}
			s.mu.Unlock()
			select {
			case s.notify <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *stream) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitLine waits until the stream has produced line as a whole line.
func (s *stream) waitLine(t *testing.T, line string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for countLines(s.output(), line) == 0 {
		select {
		case <-s.notify:
		case <-s.done:
			if countLines(s.output(), line) == 0 {
				t.Fatalf("log stream ended (%v) before line %q; got %s", s.err, line, quoteTail(s.output()))
			}
		case <-deadline.C:
			t.Fatalf("timed out waiting for log line %q; got %s", line, quoteTail(s.output()))
		}
	}
}

// waitEnd waits until Read has returned an error and returns it.
func (s *stream) waitEnd(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(timeout):
		t.Fatalf("log stream still open after %v; got %s", timeout, quoteTail(s.output()))
		return nil
	}
}
