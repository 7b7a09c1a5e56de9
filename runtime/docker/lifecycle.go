package docker

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/scion-go/scion/runtime"
)

// Start implements runtime.Runtime. A running or paused container is left
// alone, whoever started it, so a retried or replayed start never runs an
// agent twice. A container that fails to start, or exits non-zero at once,
// is a *StartError carrying the exit code and the last lines of output.
func (r *Runtime) Start(ctx context.Context, agentID string) (runtime.Status, error) {
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	var st runtime.Status
	err = r.withContainer(ctx, agentID, func(ref containerRef) error {
		c, err := r.cli.ContainerInspect(ctx, ref.id)
		if err != nil {
			return err
		}
		// The engine reports a paused container as Running too.
		if c.State != nil && (c.State.Running || c.State.Paused || c.State.Restarting) {
			st = r.status(ctx, c)
			return nil
		}
		if err := r.cli.ContainerStart(ctx, ref.id, container.StartOptions{}); err != nil {
			// A 404 may be the container gone or something it needs
			// missing; only an inspect can tell.
			if _, ierr := r.cli.ContainerInspect(ctx, ref.id); cerrdefs.IsNotFound(ierr) {
				return ierr
			}
			return r.startError(ctx, agentID, ref.id, err)
		}
		r.awaitStartup(ctx, ref.id)
		if c, err = r.cli.ContainerInspect(ctx, ref.id); err != nil {
			return err
		}
		st = r.status(ctx, c)
		if st.State == runtime.StateExited && st.ExitCode != nil && *st.ExitCode != 0 {
			return r.startError(ctx, agentID, ref.id, nil)
		}
		return nil
	})
	if _, ok := err.(*StartError); ok {
		return runtime.Status{}, err
	}
	return st, wrapErr("Start", agentID, err)
}

// awaitStartup waits up to Options.StartupWait for a just started
// container to stop running. The "not-running" condition answers at once
// for a container that has exited already, so no exit can slip between
// the start and the wait.
func (r *Runtime) awaitStartup(ctx context.Context, id string) {
	if r.opts.StartupWait <= 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, r.opts.StartupWait)
	defer cancel()
	done, errs := r.cli.ContainerWait(wctx, id, container.WaitConditionNotRunning)
	select {
	case <-done:
	case <-errs:
	}
}

// StartError is Start's error for a container that could not start or
// died at once.
type StartError struct {
	AgentID  string
	ExitCode int    // the engine's exit code (127: command not found)
	Cause    string // the engine's explanation, if any
	Output   string // the last lines the container wrote
}

func (e *StartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "docker runtime: agent %s died at start (exit code %d)", e.AgentID, e.ExitCode)
	if e.Cause != "" {
		b.WriteString(": " + e.Cause)
	}
	if e.Output != "" {
		b.WriteString("; last output:\n" + e.Output)
	}
	return b.String()
}

// Unwrap says when the engine refused the start because a published host
// port is taken (the broker then tries other ports).
func (e *StartError) Unwrap() error {
	if taken, port := hostPortTaken(e.Cause); taken {
		return &runtime.HostPortTakenError{Port: port}
	}
	return nil
}

// startError builds the StartError of a container, from the engine's
// error (engineErr, if the start call failed) and its state and logs.
func (r *Runtime) startError(ctx context.Context, agentID, id string, engineErr error) error {
	e := &StartError{AgentID: agentID, ExitCode: -1}
	if engineErr != nil {
		e.Cause = engineErr.Error()
	}
	tty := false
	if c, err := r.cli.ContainerInspect(ctx, id); err == nil && c.State != nil {
		e.ExitCode = c.State.ExitCode
		if e.Cause == "" {
			e.Cause = c.State.Error
		}
		tty = c.Config != nil && c.Config.Tty
	}
	e.Output = r.logTail(ctx, id, tty)
	return e
}

// Stop implements runtime.Runtime: the engine sends the container's stop
// signal (SIGTERM) and kills it once grace has passed. The engine counts
// grace in whole seconds, so it is rounded up; grace 0 means
// Options.StopGrace, a negative grace kills at once. A paused container is
// resumed first, or it could not act on the signal. Stopping a container
// that is not running is a no-op.
func (r *Runtime) Stop(ctx context.Context, agentID string, grace time.Duration) (runtime.Status, error) {
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	if grace == 0 {
		grace = r.opts.StopGrace
	}
	secs := max(0, int(math.Ceil(grace.Seconds())))
	var st runtime.Status
	err = r.withContainer(ctx, agentID, func(ref containerRef) error {
		c, err := r.cli.ContainerInspect(ctx, ref.id)
		if err != nil {
			return err
		}
		if c.State != nil && c.State.Paused {
			if err := r.cli.ContainerUnpause(ctx, ref.id); err != nil && !cerrdefs.IsConflict(err) {
				return err
			}
		}
		if c.State != nil && (c.State.Running || c.State.Restarting) {
			release, err := r.teardown.enter(ctx)
			if err != nil {
				return err
			}
			// The inspect is inside the gate: the engine answers it only
			// once its teardown of the container (network included) is
			// done, which the stop's answer does not wait for.
			err = r.cli.ContainerStop(ctx, ref.id, container.StopOptions{Timeout: &secs})
			if err == nil {
				c, err = r.cli.ContainerInspect(ctx, ref.id)
			}
			release()
			if err != nil {
				return err
			}
		}
		st = r.status(ctx, c)
		return nil
	})
	return st, wrapErr("Stop", agentID, err)
}

// Suspend implements runtime.Runtime by pausing the container (cgroup
// freezer): its processes keep their memory but get no CPU. Suspending a
// paused container is a no-op, one that is not running an error.
func (r *Runtime) Suspend(ctx context.Context, agentID string) (runtime.Status, error) {
	return r.pauseOrUnpause(ctx, "Suspend", agentID, true)
}

// Resume implements runtime.Runtime by unpausing the container. Resuming a
// running container is a no-op, one that is not paused or running an
// error.
func (r *Runtime) Resume(ctx context.Context, agentID string) (runtime.Status, error) {
	return r.pauseOrUnpause(ctx, "Resume", agentID, false)
}

func (r *Runtime) pauseOrUnpause(ctx context.Context, op, agentID string, pause bool) (runtime.Status, error) {
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	var st runtime.Status
	err = r.withContainer(ctx, agentID, func(ref containerRef) error {
		c, err := r.cli.ContainerInspect(ctx, ref.id)
		if err != nil {
			return err
		}
		st = r.status(ctx, c)
		switch {
		case st.State == runtime.StatePaused && pause, st.State == runtime.StateRunning && !pause:
			return nil // already there
		case st.State != runtime.StatePaused && st.State != runtime.StateRunning:
			return fmt.Errorf("%w (it is %s)", errNotRunning, st.State)
		case pause:
			err = r.cli.ContainerPause(ctx, ref.id)
		default:
			err = r.cli.ContainerUnpause(ctx, ref.id)
		}
		if err != nil {
			return err
		}
		if c, err = r.cli.ContainerInspect(ctx, ref.id); err != nil {
			return err
		}
		st = r.status(ctx, c)
		return nil
	})
	return st, wrapErr(op, agentID, err)
}

// Delete implements runtime.Runtime: it removes the agent's container,
// killing it if it runs. Bind-mounted directories are the caller's and
// stay; anonymous volumes are kept too, as the engine would need them to
// be named to be useful anyway. Every container of the agent goes, should
// a crash ever have left two.
func (r *Runtime) Delete(ctx context.Context, agentID string) error {
	if err := r.checkOpen(); err != nil {
		return err
	}
	if !validID(agentID) {
		return notFound(agentID)
	}
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return err
	}
	defer unlock()
	cs, err := r.list(ctx, agentID)
	if err != nil {
		return wrapErr("Delete", agentID, err)
	}
	r.mu.Lock()
	delete(r.refs, agentID)
	r.mu.Unlock()
	if len(cs) == 0 {
		return notFound(agentID)
	}
	for _, c := range cs {
		r.markDeleting(c.ID)
		release, err := r.teardown.enter(ctx)
		if err != nil {
			return wrapErr("Delete", agentID, err)
		}
		err = r.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: false})
		release()
		if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
			// The engine is removing it already (another client, or an
			// earlier Delete whose caller gave up while the engine went
			// on): the container is going, which is what was asked; wait
			// until it is gone so that a create under the same name
			// right after this does not meet it.
			err = r.waitGone(ctx, c.ID)
		}
		if err != nil && !cerrdefs.IsNotFound(err) {
			return wrapErr("Delete", agentID, err)
		}
	}
	return nil
}

// waitGone polls the engine until container id no longer exists, bounded
// by ctx. It returns nil once the engine answers not found.
func (r *Runtime) waitGone(ctx context.Context, id string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := r.cli.ContainerInspect(ctx, id)
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the engine's removal of %s: %w", id, ctx.Err())
		case <-tick.C:
		}
	}
}
