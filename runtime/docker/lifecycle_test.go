package docker_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

func TestDiesAtStart(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	ctx := testCtx(t)

	// With a StartupWait, Start itself reports a command that cannot run.
	t.Run("no such command", func(t *testing.T) {
		rt := newBrokerRuntime(t, docker.Options{Client: engine, StartupWait: 10 * time.Second})
		spec := agentSpec(t, rt, "nocmd")
		spec.Command = []string{"/no/such/program"}
		if _, err := rt.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		_, err := rt.Start(ctx, spec.AgentID)
		var se *docker.StartError
		if !errors.As(err, &se) {
			t.Fatalf("Start = %v; want a StartError", err)
		}
		t.Logf("Start: %v", err)
		// (The engine's init reports the failed exec, in the output.)
		if se.ExitCode != 127 || !strings.Contains(err.Error(), "/no/such/program") ||
			!strings.Contains(err.Error(), "exit code 127") {
			t.Errorf("StartError = %q (code %d); want code 127 naming the program", err, se.ExitCode)
		}
		st, err := rt.Inspect(ctx, spec.AgentID)
		if err != nil || st.State != runtime.StateExited || st.Message == "" {
			t.Errorf("Inspect after failed start = %+v, %v; want exited with a message", st, err)
		}
		if err := rt.Delete(ctx, spec.AgentID); err != nil {
			t.Fatal(err)
		}
		if cs := engineContainers(t, spec.AgentID); len(cs) != 0 {
			t.Fatalf("Delete left %d containers", len(cs))
		}
	})

	// Without the engine's init the engine itself fails the start.
	t.Run("no such command, no init", func(t *testing.T) {
		rt := newBrokerRuntime(t, docker.Options{Client: engine, DisableInit: true})
		spec := agentSpec(t, rt, "noinit")
		spec.Command = []string{"/no/such/program"}
		if _, err := rt.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		_, err := rt.Start(ctx, spec.AgentID)
		var se *docker.StartError
		if !errors.As(err, &se) || !strings.Contains(se.Cause, "/no/such/program") {
			t.Fatalf("Start = %v; want a StartError naming the program", err)
		}
		t.Logf("Start: %v", err)
	})

	// Without one, Start may or may not see the death, and the exit event
	// and Inspect tell the cause either way.
	t.Run("exits at once", func(t *testing.T) {
		events := rt.Events()
		spec := agentSpec(t, rt, "crash", "exit", "3", "boom")
		if _, err := rt.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		// The exit may beat Start's look at the container or not: either
		// Start says so, or the exit event and Inspect do.
		_, err := rt.Start(ctx, spec.AgentID)
		var se *docker.StartError
		if err != nil {
			if !errors.As(err, &se) || se.ExitCode != 3 || !strings.Contains(se.Output, "boom (stderr)") {
				t.Fatalf("Start = %v; want a StartError with code 3 and the output", err)
			}
		}
		st := waitExitEvent(t, events, spec.AgentID)
		t.Logf("exit event message: %s", st.Message)
		// stdout and stderr are separate pipes: their order may vary.
		lines := strings.Split(st.Message, "\n")
		if !strings.HasPrefix(st.Message, "exited with code 3") ||
			!slices.Contains(lines, "boom") || !slices.Contains(lines, "boom (stderr)") {
			t.Errorf("exit event message %q lacks the code or the output", st.Message)
		}
		got, err := rt.Inspect(ctx, spec.AgentID)
		if err != nil || got.ExitCode == nil || *got.ExitCode != 3 || got.Message != st.Message {
			t.Errorf("Inspect = %+v, %v; want exit code 3 and the event's message", got, err)
		}
	})
}

func TestInventoryScopedToBroker(t *testing.T) {
	ctx := testCtx(t)
	rtA := newBrokerRuntime(t, docker.Options{Client: engine, BrokerID: testPrefix + "-a"})
	rtB := newBrokerRuntime(t, docker.Options{Client: engine, BrokerID: testPrefix + "-b"})
	specA := agentSpec(t, rtA, "scope-a", "serve", "a")
	specB := agentSpec(t, rtB, "scope-b", "serve", "b")
	if _, err := rtA.Create(ctx, specA); err != nil {
		t.Fatal(err)
	}
	if _, err := rtB.Create(ctx, specB); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rt   *docker.Runtime
		own  string
		peer string
	}{{rtA, specA.AgentID, specB.AgentID}, {rtB, specB.AgentID, specA.AgentID}} {
		inv, err := c.rt.Inventory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(inv) != 1 || inv[0].AgentID != c.own {
			t.Errorf("Inventory = %+v; want just %s", inv, c.own)
		}
		if _, err := c.rt.Inspect(ctx, c.peer); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Inspect of the other broker's agent: %v, want ErrNotFound", err)
		}
		if err := c.rt.Delete(ctx, c.peer); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Delete of the other broker's agent: %v, want ErrNotFound", err)
		}
	}
	// A spec for another broker is refused rather than mislabelled.
	other := agentSpec(t, rtA, "scope-other", "serve", "x")
	other.BrokerID = testPrefix + "-b"
	if _, err := rtA.Create(ctx, other); err == nil {
		t.Error("Create of a spec for another broker succeeded")
	}
	if len(engineContainers(t, specB.AgentID)) != 1 {
		t.Error("the other broker's container is gone")
	}
}

// TestConcurrentRuntimesCreateOnce: two Runtimes of one broker (a broker
// restarting while a create is retried, say) racing to create the same
// agent make one container, and the loser gets an error.
func TestConcurrentRuntimesCreateOnce(t *testing.T) {
	opts := docker.Options{Client: engine}
	rt1 := newBrokerRuntime(t, opts)
	opts.BrokerID = testPrefix + "-TestConcurrentRuntimesCreateOnce"
	rt2, err := docker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	ctx := testCtx(t)
	spec := agentSpec(t, rt1, "race", "serve", "race")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, rt := range []*docker.Runtime{rt1, rt2} {
		wg.Go(func() { _, errs[i] = rt.Create(ctx, spec) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("concurrent Creates: %v / %v; want exactly one success", errs[0], errs[1])
	}
	if cs := engineContainers(t, spec.AgentID); len(cs) != 1 {
		t.Fatalf("%d containers for one agent", len(cs))
	}
	// Whoever created it, both runtimes drive the same container.
	if _, err := rt2.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	st1, err := rt1.Start(ctx, spec.AgentID)
	if err != nil || st1.State != runtime.StateRunning {
		t.Fatalf("Start through the other runtime = %+v, %v", st1, err)
	}
	waitLog(t, ctx, rt1, spec.AgentID, "race")
	if out := logsOf(ctx, rt2, spec.AgentID); strings.Count(out, "race\n") != 1 {
		t.Fatalf("agent started twice: %q", out)
	}
}

// TestRemovedBehindOurBack: a container removed outside the broker is
// reported missing on Events, and the runtime's cache does not keep it
// alive.
func TestRemovedBehindOurBack(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	ctx := testCtx(t)
	events := rt.Events()
	spec := agentSpec(t, rt, "behind", "serve", "m")
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	cs := engineContainers(t, spec.AgentID)
	if err := engine.ContainerRemove(ctx, cs[0].ID, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	st := waitEvent(t, events, spec.AgentID, runtime.StateMissing)
	if st.RunID != spec.RunID || !strings.Contains(st.Message, "removed outside the broker") {
		t.Errorf("missing event = %+v", st)
	}
	if _, err := rt.Inspect(ctx, spec.AgentID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Inspect of a removed container: %v, want ErrNotFound", err)
	}
	// The agent ID is free again.
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
}

// TestStopReachesTheAgent: a polite stop reaches the agent's command with
// the engine's init as PID 1 (which forwards it) and without (the command
// is PID 1 and handles it itself), well before the grace period.
func TestStopReachesTheAgent(t *testing.T) {
	for _, noInit := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableInit=%v", noInit), func(t *testing.T) {
			rt := newBrokerRuntime(t, docker.Options{Client: engine, DisableInit: noInit})
			ctx := testCtx(t)
			spec := agentSpec(t, rt, "stop", "serve", "stop-marker")
			if _, err := rt.Create(ctx, spec); err != nil {
				t.Fatal(err)
			}
			if _, err := rt.Start(ctx, spec.AgentID); err != nil {
				t.Fatal(err)
			}
			waitLog(t, ctx, rt, spec.AgentID, "stop-marker")
			start := time.Now()
			st, err := rt.Stop(ctx, spec.AgentID, 30*time.Second)
			if err != nil || st.State != runtime.StateExited || st.ExitCode == nil || *st.ExitCode != 143 {
				t.Fatalf("Stop = %+v, %v; want exited 143 (SIGTERM handled)", st, err)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Stop took %v", took)
			}
			waitLog(t, ctx, rt, spec.AgentID, "stop-marker terminated by terminated")
		})
	}
}

// TestDeleteDuringRemovalInProgress: a Delete that meets a removal the
// engine is already doing (another client's, or an earlier Delete whose
// caller gave up while the engine went on) waits for the container to be
// gone instead of failing with the engine's 409 "removal ... already in
// progress": the container is going, which is what a delete asks for.
func TestDeleteDuringRemovalInProgress(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	for i := range 8 {
		// A bound per trial, not one for all eight: beside other packages'
		// containers (a CI run) the engine took a minute for a few starts.
		ctx := testCtx(t)
		spec := agentSpec(t, rt, fmt.Sprintf("racing-%d", i), "serve", "m")
		if _, err := rt.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Start(ctx, spec.AgentID); err != nil {
			t.Fatal(err)
		}
		cs := engineContainers(t, spec.AgentID)
		other := make(chan error, 1)
		go func() {
			other <- engine.ContainerRemove(ctx, cs[0].ID, container.RemoveOptions{Force: true})
		}()
		err := rt.Delete(ctx, spec.AgentID)
		if oerr := <-other; oerr != nil && !cerrdefs.IsNotFound(oerr) && !cerrdefs.IsConflict(oerr) {
			t.Fatalf("trial %d: the engine's own remove: %v", i, oerr)
		}
		if err != nil && !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("trial %d: Delete beside a removal in progress: %v", i, err)
		}
		if _, ierr := engine.ContainerInspect(ctx, cs[0].ID); !cerrdefs.IsNotFound(ierr) {
			t.Fatalf("trial %d: the container is still there after Delete returned: %v", i, ierr)
		}
	}
}
