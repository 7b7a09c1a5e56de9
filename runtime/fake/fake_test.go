package fake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/runtime/runtimetest"
)

// The suite's test agent, in fake terms: the command is
// ["fake-agent", marker] plus "ignore-term" for a stubborn one; the fake
// prints the marker when it starts.
func command(marker string, ignoreTerm bool) []string {
	cmd := []string{"fake-agent", marker}
	if ignoreTerm {
		cmd = append(cmd, "ignore-term")
	}
	return cmd
}

func newFake(t *testing.T) runtime.Runtime {
	rt := fake.New()
	rt.SetStartOutput(func(s runtime.Spec) string { return s.Command[1] + "\n" })
	rt.SetIgnoreTerm(func(s runtime.Spec) bool { return slices.Contains(s.Command, "ignore-term") })
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestConformance(t *testing.T) {
	runtimetest.Run(t, newFake, runtimetest.Options{
		Command: command,
		Finish: func(t *testing.T, rt runtime.Runtime, spec runtime.Spec, code int) {
			f := rt.(*fake.Runtime)
			if err := f.WriteLog(spec.AgentID, spec.Command[1]+" finished\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.SimulateExit(spec.AgentID, code); err != nil {
				t.Fatal(err)
			}
		},
		SupportsSuspend: true,
		Restart: func(t *testing.T, old runtime.Runtime) runtime.Runtime {
			rt := old.(*fake.Runtime).Restart()
			t.Cleanup(func() { rt.Close() })
			return rt
		},
		Timeout: 10 * time.Second,
	})
}

func TestDefaultOutput(t *testing.T) {
	rt := fake.New()
	ctx := context.Background()
	if _, err := rt.Create(ctx, runtime.Spec{AgentID: "a1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	r, err := rt.Logs(ctx, "a1", false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if got, want := string(b), "fake agent a1 started\n"; got != want {
		t.Fatalf("log = %q, want %q", got, want)
	}
}

func TestFailNext(t *testing.T) {
	rt := fake.New()
	ctx := context.Background()
	boom := errors.New("boom")
	rt.FailNext("Create", boom)
	rt.FailNext("Create", boom)
	for i := range 2 {
		if _, err := rt.Create(ctx, runtime.Spec{AgentID: "a1"}); !errors.Is(err, boom) {
			t.Fatalf("Create #%d: err = %v, want injected error", i, err)
		}
	}
	if _, err := rt.Inspect(ctx, "a1"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("failed Create created something: %v", err)
	}
	if _, err := rt.Create(ctx, runtime.Spec{AgentID: "a1"}); err != nil {
		t.Fatalf("third Create: %v (injected errors are one per call)", err)
	}
	rt.FailNext("Start", boom)
	if _, err := rt.Start(ctx, "a1"); !errors.Is(err, boom) {
		t.Fatalf("Start: %v", err)
	}
	if st, _ := rt.Inspect(ctx, "a1"); st.State != runtime.StateCreated {
		t.Fatalf("failed Start changed state to %s", st.State)
	}

	defer func() {
		if recover() == nil {
			t.Error("FailNext with an unknown method did not panic")
		}
	}()
	rt.FailNext("Strat", boom)
}

func TestLatency(t *testing.T) {
	rt := fake.New()
	rt.SetLatency("Inspect", 50*time.Millisecond)
	start := time.Now()
	_, err := rt.Inspect(context.Background(), "x")
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("Inspect took %v, want >= 50ms latency", took)
	}
	// Latency honours the context.
	rt.SetLatency("", time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := rt.Create(ctx, runtime.Spec{AgentID: "a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Create under an hour of latency: %v, want deadline exceeded", err)
	}
}

func TestSimulateExitNeedsLiveAgent(t *testing.T) {
	rt := fake.New()
	ctx := context.Background()
	if err := rt.SimulateExit("nope", 1); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("SimulateExit unknown: %v", err)
	}
	rt.Create(ctx, runtime.Spec{AgentID: "a"})
	if err := rt.SimulateExit("a", 1); err == nil {
		t.Fatal("SimulateExit of a created agent succeeded")
	}
}

func BenchmarkCreateStartDelete(b *testing.B) {
	rt := fake.New()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine needs its own IDs; a pointer's address is unique.
		prefix := fmt.Sprintf("%p-", new(int))
		i := 0
		for pb.Next() {
			id := prefix + fmt.Sprint(i)
			i++
			if _, err := rt.Create(ctx, runtime.Spec{AgentID: id, RunID: "r", BrokerID: "b", ProjectID: "p"}); err != nil {
				b.Fatal(err)
			}
			if _, err := rt.Start(ctx, id); err != nil {
				b.Fatal(err)
			}
			if err := rt.Delete(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestCallsCountAcrossRestart(t *testing.T) {
	ctx := context.Background()
	r := fake.New()
	if _, err := r.Create(ctx, runtime.Spec{AgentID: "a"}); err != nil {
		t.Fatal(err)
	}
	r.FailNext("Stop", errors.New("injected"))
	_, _ = r.Stop(ctx, "a", 0)
	r2 := r.Restart()
	_, _ = r2.Stop(ctx, "a", 0)
	if r.Calls("Create") != 1 || r.Calls("Stop") != 2 || r2.Calls("Stop") != 2 || r.Calls("Delete") != 0 {
		t.Fatalf("calls: create %d, stop %d/%d, delete %d", r.Calls("Create"), r.Calls("Stop"), r2.Calls("Stop"), r.Calls("Delete"))
	}
}
