// Package runtimetest is the conformance suite every runtime.Runtime
// implementation runs from its own tests:
//
//	func TestConformance(t *testing.T) {
//		runtimetest.Run(t, newRuntime, runtimetest.Options{...})
//	}
//
// The suite drives a scripted test agent whose behaviour each runtime
// describes through Options (a real process for the process runtime, a
// simulated one for the fake), so the same assertions hold for both. Every
// wait polls a condition against a deadline instead of sleeping, so the
// suite stays reliable on a loaded machine without being slow on an idle
// one.
package runtimetest

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
)

// Options describes the runtime under test.
type Options struct {
	// Command returns the Spec.Command of the suite's test agent. Once
	// started and ready, the agent writes marker on a line of its own and
	// then runs until it is stopped or Finish makes it exit. With
	// ignoreTerm it must ignore the polite stop request (SIGTERM), so only
	// the kill after the grace period ends it. Required.
	Command func(marker string, ignoreTerm bool) []string
	// Finish makes a running test agent write "<marker> finished" on a line
	// of its own and then exit with code, as if it ended by itself.
	// Required.
	Finish func(t *testing.T, rt runtime.Runtime, spec runtime.Spec, code int)
	// SupportsSuspend enables the Suspend/Resume tests.
	SupportsSuspend bool
	// Restart, if set, returns a new runtime over old's state, as a broker
	// restart would; the suite has already closed old. It enables the
	// re-adoption test.
	Restart func(t *testing.T, old runtime.Runtime) runtime.Runtime
	// Timeout bounds each wait for a condition; zero means 30s. It is
	// generous on purpose: a passing run never waits for it.
	Timeout time.Duration
	// Image is the Spec.Image of the suite's agents; empty means
	// "scion/test-agent:latest". Runtimes that really run images set it to
	// the test image they built (under a unique tag).
	Image string
	// BrokerID is the Spec.BrokerID of the suite's agents; empty means
	// "broker-rtt". Runtimes whose state is shared (an engine other test
	// runs may use at the same time) set a unique one.
	BrokerID string
	// NoProcess, when not empty, says why the test agent cannot run at
	// all in this test setup (the Kubernetes runtime against an API server
	// with no kubelet: pods are accepted but never run). The suite then
	// checks everything the runtime's own bookkeeping answers (states,
	// labels, idempotence, not-found, inventory, concurrency, close) and
	// skips, with this reason, what needs the agent's output or exit. No
	// runtime that can run its agents sets it.
	NoProcess string
	// LogsPerStart says that each Start runs the agent in a new container
	// whose log starts empty (a Kubernetes pod), instead of appending to
	// the previous run's output.
	LogsPerStart bool

	// The options below enable the tests of optional capabilities; each
	// test is skipped when its option is unset or the runtime lacks the
	// capability.

	// ExecCommand returns a command that, run inside a running test agent,
	// writes out on a line of its own to stdout and exits with code. It
	// enables the Exec test for runtimes that implement runtime.Execer.
	ExecCommand func(out string, code int) []string
	// EchoCommand is a command that copies its standard input to its
	// standard output until end of input. It enables the Exec stdin test
	// (run through Exec) and, as an agent's own command, the Attach test
	// for runtimes that implement runtime.Attacher.
	EchoCommand []string
}

// Run runs the conformance suite against runtimes made by newRuntime, which
// is called once per subtest and should register its own cleanup.
func Run(t *testing.T, newRuntime func(t *testing.T) runtime.Runtime, opts Options) {
	if opts.Command == nil || opts.Finish == nil {
		t.Fatal("runtimetest: Options.Command and Options.Finish are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	s := &suite{opts: opts, newRuntime: newRuntime}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Lifecycle", s.testLifecycle},
		{"StartIsIdempotent", s.testStartIdempotent},
		{"CreateDuplicate", s.testCreateDuplicate},
		{"StopGraceThenKill", s.testStopGraceThenKill},
		{"DeleteRunning", s.testDeleteRunning},
		{"NotFound", s.testNotFound},
		{"SuspendResume", s.testSuspendResume},
		{"Logs", s.testLogs},
		{"LogsFollow", s.testLogsFollow},
		{"LogsFollowCancel", s.testLogsFollowCancel},
		{"Inventory", s.testInventory},
		{"ExitEvents", s.testExitEvents},
		{"Concurrency", s.testConcurrency},
		{"Readoption", s.testReadoption},
		{"Close", s.testClose},
		{"Exec", s.testExec},
		{"ExecStdin", s.testExecStdin},
		{"Attach", s.testAttach},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

type suite struct {
	opts       Options
	newRuntime func(t *testing.T) runtime.Runtime
	seq        atomic.Int64
}

// env is one subtest's runtime plus the directory its agents' workspaces
// live under.
type env struct {
	t    *testing.T
	s    *suite
	rt   runtime.Runtime
	base string
	ctx  context.Context
}

// setup makes a runtime for t. The workspace root is created before the
// runtime so that (cleanups running last-in first-out) it is removed only
// after the runtime's own cleanup has stopped the agents using it.
func (s *suite) setup(t *testing.T) *env {
	base := t.TempDir()
	rt := s.newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*s.opts.Timeout)
	t.Cleanup(cancel)
	e := &env{t: t, s: s, rt: rt, base: base, ctx: ctx}
	t.Cleanup(func() { removeAll(rt) })
	return e
}

// removeAll deletes every agent rt knows, best effort: the runtime may
// already be closed.
func removeAll(rt runtime.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := rt.Inventory(ctx)
	if err != nil {
		return
	}
	for _, st := range inv {
		_ = rt.Delete(ctx, st.AgentID)
	}
}

// spec returns a fresh, fully labelled spec for a test agent. IDs are
// unique across the whole suite so that leftovers of one subtest can never
// be mistaken for another's agents.
func (e *env) spec(name string, ignoreTerm bool) runtime.Spec {
	id := fmt.Sprintf("rtt-%s-%d", name, e.s.seq.Add(1))
	return runtime.Spec{
		AgentID:   id,
		RunID:     "run-" + id,
		BrokerID:  cmp.Or(e.s.opts.BrokerID, "broker-rtt"),
		ProjectID: "project-rtt",
		Slug:      name,
		Image:     cmp.Or(e.s.opts.Image, "scion/test-agent:latest"),
		Command:   e.s.opts.Command(marker(id), ignoreTerm),
		Env:       map[string]string{"SCION_TEST_AGENT": id},
		WorkDir:   filepath.Join(e.base, id, "work"),
		HomeDir:   filepath.Join(e.base, id, "home"),
		Labels:    map[string]string{"test.suite": "runtimetest", "test.name": name},
	}
}

// needProcess skips t when the test agent cannot run (Options.NoProcess).
func (s *suite) needProcess(t *testing.T) {
	t.Helper()
	if s.opts.NoProcess != "" {
		t.Skip("needs a running test agent: " + s.opts.NoProcess)
	}
}

// process reports whether the test agent really runs.
func (e *env) process() bool { return e.s.opts.NoProcess == "" }

func marker(agentID string) string { return "marker-" + agentID }

// finishedLine is what Finish makes the agent print.
func finishedLine(agentID string) string { return marker(agentID) + " finished" }
