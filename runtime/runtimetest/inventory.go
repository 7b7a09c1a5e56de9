package runtimetest

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
)

func fmtCode(c *int) string {
	if c == nil {
		return "<nil>"
	}
	return strconv.Itoa(*c)
}

// inventory returns the runtime's inventory keyed by agent ID.
func (e *env) inventory() map[string]runtime.Status {
	e.t.Helper()
	inv, err := e.rt.Inventory(e.ctx)
	if err != nil {
		e.t.Fatalf("Inventory: %v", err)
	}
	m := make(map[string]runtime.Status, len(inv))
	for _, st := range inv {
		if _, dup := m[st.AgentID]; dup {
			e.t.Fatalf("Inventory lists %s twice", st.AgentID)
		}
		m[st.AgentID] = st
	}
	return m
}

// checkLabels verifies that st carries spec's identity and custom labels.
func checkLabels(t *testing.T, st runtime.Status, spec runtime.Spec) {
	t.Helper()
	want := map[string]string{
		runtime.LabelAgentID:   spec.AgentID,
		runtime.LabelRunID:     spec.RunID,
		runtime.LabelBrokerID:  spec.BrokerID,
		runtime.LabelProjectID: spec.ProjectID,
		runtime.LabelSlug:      spec.Slug,
	}
	for k, v := range spec.Labels {
		want[k] = v
	}
	for k, v := range want {
		if st.Labels[k] != v {
			t.Errorf("%s: label %s = %q, want %q", spec.AgentID, k, st.Labels[k], v)
		}
	}
	if st.AgentID != spec.AgentID || st.RunID != spec.RunID {
		t.Errorf("status IDs = %s/%s, want %s/%s", st.AgentID, st.RunID, spec.AgentID, spec.RunID)
	}
}

func (s *suite) testInventory(t *testing.T) {
	e := s.setup(t)
	running := e.spec("inv-running", false)
	created := e.spec("inv-created", false)
	created.Labels["test.extra"] = "x"
	e.createStart(running)
	if _, err := e.rt.Create(e.ctx, created); err != nil {
		t.Fatal(err)
	}

	inv := e.inventory()
	if len(inv) != 2 {
		t.Fatalf("Inventory has %d agents, want 2: %v", len(inv), inv)
	}
	checkLabels(t, inv[running.AgentID], running)
	checkLabels(t, inv[created.AgentID], created)
	if got := inv[running.AgentID].State; got != runtime.StateRunning {
		t.Errorf("running agent listed as %q", got)
	}
	if got := inv[created.AgentID].State; got != runtime.StateCreated {
		t.Errorf("created agent listed as %q", got)
	}
	checkLabels(t, e.inspect(running.AgentID), running)

	if err := e.rt.Delete(e.ctx, created.AgentID); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.inventory()[created.AgentID]; ok {
		t.Fatal("deleted agent still in inventory")
	}
}

// waitExitEvent waits for an exited event about id on events, skipping
// events about other agents or earlier states.
func (s *suite) waitExitEvent(t *testing.T, events <-chan runtime.Event, id string) runtime.Status {
	t.Helper()
	deadline := time.NewTimer(s.opts.Timeout)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("Events channel closed while waiting for an exit event")
			}
			if ev.Status.AgentID == id && ev.Status.State == runtime.StateExited {
				return ev.Status
			}
		case <-deadline.C:
			t.Fatalf("no exit event for %s within %v", id, s.opts.Timeout)
		}
	}
}

func (s *suite) testExitEvents(t *testing.T) {
	s.needProcess(t)
	e := s.setup(t)
	events := e.rt.Events()
	if events == nil {
		t.Skip("runtime reports no events")
	}
	spec := e.spec("event", false)
	e.createStart(spec)
	s.opts.Finish(t, e.rt, spec, 7)
	st := s.waitExitEvent(t, events, spec.AgentID)
	if st.ExitCode == nil || *st.ExitCode != 7 {
		t.Fatalf("exit event code = %s, want 7", fmtCode(st.ExitCode))
	}
	checkLabels(t, st, spec)
}

func (s *suite) testConcurrency(t *testing.T) {
	const n = 20
	e := s.setup(t)
	specs := make([]runtime.Spec, n)
	for i := range specs {
		specs[i] = e.spec(fmt.Sprintf("conc%02d", i), false)
	}
	// parallel runs fn for every spec at once and fails on any error.
	parallel := func(what string, fn func(runtime.Spec) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, spec := range specs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = fn(spec)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s %s: %v", what, specs[i].AgentID, err)
			}
		}
	}

	parallel("create+start", func(spec runtime.Spec) error {
		if _, err := e.rt.Create(e.ctx, spec); err != nil {
			return err
		}
		_, err := e.rt.Start(e.ctx, spec.AgentID)
		return err
	})
	for _, spec := range specs {
		e.waitState(spec.AgentID, runtime.StateRunning) // at once, unless Start answered pending
		if e.process() {
			e.waitLog(spec.AgentID, marker(spec.AgentID))
		}
	}
	inv := e.inventory()
	for _, spec := range specs {
		if st := inv[spec.AgentID]; st.State != runtime.StateRunning {
			t.Fatalf("%s listed as %q, want running", spec.AgentID, st.State)
		}
	}
	parallel("stop", func(spec runtime.Spec) error {
		st, err := e.rt.Stop(e.ctx, spec.AgentID, longGrace)
		if err == nil && st.State != runtime.StateExited {
			err = fmt.Errorf("state %q after Stop", st.State)
		}
		return err
	})
	parallel("delete", func(spec runtime.Spec) error { return e.rt.Delete(e.ctx, spec.AgentID) })
	if inv := e.inventory(); len(inv) != 0 {
		t.Fatalf("inventory after deleting everything: %v", inv)
	}
}

func (s *suite) testReadoption(t *testing.T) {
	s.needProcess(t)
	if s.opts.Restart == nil {
		t.Skip("runtime has no Restart option")
	}
	e := s.setup(t)
	running := e.spec("adopt-running", false)
	created := e.spec("adopt-created", false)
	exited := e.spec("adopt-exited", false)
	later := e.spec("adopt-later", false)
	runningSt := e.createStart(running)
	if _, err := e.rt.Create(e.ctx, created); err != nil {
		t.Fatal(err)
	}
	e.createStart(exited)
	s.opts.Finish(t, e.rt, exited, 5)
	e.waitState(exited.AgentID, runtime.StateExited)
	e.createStart(later)

	// The broker goes away; its agents must not.
	if err := e.rt.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	rt2 := s.opts.Restart(t, e.rt)
	t.Cleanup(func() { removeAll(rt2) })
	e2 := &env{t: t, s: s, rt: rt2, base: e.base, ctx: e.ctx}

	inv := e2.inventory()
	if len(inv) != 4 {
		t.Fatalf("inventory after restart has %d agents, want 4: %v", len(inv), inv)
	}
	for _, spec := range []runtime.Spec{running, created, exited, later} {
		checkLabels(t, inv[spec.AgentID], spec)
	}
	st := inv[running.AgentID]
	if st.State != runtime.StateRunning || !st.StartedAt.Equal(runningSt.StartedAt) {
		t.Fatalf("adopted agent = %s started %v, want running started %v", st.State, st.StartedAt, runningSt.StartedAt)
	}
	if got := inv[created.AgentID].State; got != runtime.StateCreated {
		t.Errorf("created agent after restart: %q", got)
	}
	if st := inv[exited.AgentID]; st.State != runtime.StateExited || st.ExitCode == nil || *st.ExitCode != 5 {
		t.Errorf("exited agent after restart = %s code %s, want exited 5", st.State, fmtCode(st.ExitCode))
	}

	// Start on the adopted agent is a no-op, never a second launch.
	st, err := rt2.Start(e.ctx, running.AgentID)
	if err != nil || st.State != runtime.StateRunning || !st.StartedAt.Equal(runningSt.StartedAt) {
		t.Fatalf("Start of adopted agent = %+v, %v; want the same running agent", st, err)
	}
	out := e2.waitLog(running.AgentID, marker(running.AgentID))
	if n := countLines(out, marker(running.AgentID)); n != 1 {
		t.Fatalf("adopted agent's marker appears %d times, want 1", n)
	}

	// An adopted agent exiting by itself is still reported.
	if events := rt2.Events(); events != nil {
		s.opts.Finish(t, rt2, later, 9)
		st := s.waitExitEvent(t, events, later.AgentID)
		if st.ExitCode == nil || *st.ExitCode != 9 {
			t.Errorf("adopted agent's exit event code = %s, want 9", fmtCode(st.ExitCode))
		}
	}

	// And it can be stopped through the new instance.
	start := time.Now()
	st, err = rt2.Stop(e.ctx, running.AgentID, longGrace)
	if err != nil || st.State != runtime.StateExited {
		t.Fatalf("Stop of adopted agent = %+v, %v; want exited", st, err)
	}
	if took := time.Since(start); took > longGrace/2 {
		t.Errorf("Stop of adopted agent took %v", took)
	}
	for _, spec := range []runtime.Spec{running, created, exited, later} {
		if err := rt2.Delete(e.ctx, spec.AgentID); err != nil {
			t.Errorf("Delete %s after restart: %v", spec.AgentID, err)
		}
	}
}
