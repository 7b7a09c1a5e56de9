package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/scion-go/scion/runtime"
)

// crashWindow is how soon after starting a non-zero exit counts as dying
// at start: then the status message carries the last lines of output,
// since that is where the cause (a missing file, a bad flag) is written.
const crashWindow = 10 * time.Second

// inventoryParallel bounds concurrent inspects in Inventory.
const inventoryParallel = 4

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, agentID string) (runtime.Status, error) {
	var st runtime.Status
	err := r.withContainer(ctx, agentID, func(ref containerRef) error {
		c, err := r.cli.ContainerInspect(ctx, ref.id)
		if err != nil {
			return err
		}
		st = r.status(ctx, c)
		return nil
	})
	return st, wrapErr("Inspect", agentID, err)
}

// Inventory implements runtime.Runtime: every container of this broker
// carrying an agent ID, in agent ID order. It lists containers created by
// any Runtime of this broker, which is how a restarted broker adopts them.
func (r *Runtime) Inventory(ctx context.Context) ([]runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	cs, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: r.ownFilter()})
	if err != nil {
		return nil, fmt.Errorf("docker runtime: Inventory: %w", err)
	}
	// The list lacks exit codes and times, so inspect each container; a
	// few at a time, as a broker may have many.
	out := make([]runtime.Status, len(cs))
	found := make([]bool, len(cs))
	errs := make([]error, len(cs))
	sem := make(chan struct{}, inventoryParallel)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ci, err := r.cli.ContainerInspect(ctx, c.ID)
			switch {
			case cerrdefs.IsNotFound(err): // deleted meanwhile
			case err != nil:
				errs[i] = err
			default:
				out[i], found[i] = r.status(ctx, ci), true
			}
		})
	}
	wg.Wait()
	var list []runtime.Status
	for i := range cs {
		if errs[i] != nil {
			return nil, fmt.Errorf("docker runtime: Inventory: inspect %s: %w", shortID(cs[i].ID), errs[i])
		}
		if found[i] {
			list = append(list, out[i])
		}
	}
	slices.SortFunc(list, func(a, b runtime.Status) int {
		return cmp.Or(cmp.Compare(a.AgentID, b.AgentID), a.StartedAt.Compare(b.StartedAt))
	})
	return list, nil
}

// status maps the engine's view of a container onto runtime.Status.
func (r *Runtime) status(ctx context.Context, c container.InspectResponse) runtime.Status {
	var labels map[string]string
	if c.Config != nil {
		labels = c.Config.Labels
	}
	st := runtime.Status{
		AgentID: labels[runtime.LabelAgentID],
		RunID:   labels[runtime.LabelRunID],
		Labels:  maps.Clone(labels),
	}
	s := c.State
	if s == nil {
		st.State = runtime.StateMissing
		st.Message = "the engine reports no state"
		return st
	}
	st.StartedAt = engineTime(s.StartedAt)
	switch s.Status {
	case container.StateCreated:
		st.State = runtime.StateCreated
		if s.Error != "" {
			// A start that failed before the command ran (no such
			// executable, a bad mount) leaves the container "created"
			// with the cause; for the agent that is an exit.
			st.State = runtime.StateExited
			code := s.ExitCode
			st.ExitCode = &code
			st.Message = s.Error
		}
	case container.StateRunning, container.StateRestarting:
		st.State = runtime.StateRunning
	case container.StatePaused:
		st.State = runtime.StatePaused
	case container.StateExited, container.StateDead, container.StateRemoving:
		st.State = runtime.StateExited
		code := s.ExitCode
		st.ExitCode = &code
		st.FinishedAt = engineTime(s.FinishedAt)
		st.Message = r.exitMessage(ctx, c.ID, c.Config != nil && c.Config.Tty, s)
	default:
		st.State = runtime.StateMissing
		st.Message = "unknown engine state " + string(s.Status)
	}
	return st
}

// exitMessage explains an exit that was not a plain success.
func (r *Runtime) exitMessage(ctx context.Context, id string, tty bool, s *container.State) string {
	switch {
	case s.OOMKilled:
		return fmt.Sprintf("killed for running out of memory (exit code %d)", s.ExitCode)
	case s.Error != "":
		return s.Error
	case s.ExitCode == 0:
		return ""
	}
	started, finished := engineTime(s.StartedAt), engineTime(s.FinishedAt)
	ran := finished.Sub(started)
	if started.IsZero() || finished.IsZero() || ran > crashWindow {
		return fmt.Sprintf("exited with code %d", s.ExitCode)
	}
	msg := fmt.Sprintf("exited with code %d right after starting", s.ExitCode)
	if d := ran.Round(time.Millisecond); d > 0 {
		msg = fmt.Sprintf("exited with code %d %v after starting", s.ExitCode, d)
	}
	if tail := r.logTail(ctx, id, tty); tail != "" {
		msg += "; last output:\n" + tail
	}
	return msg
}

// wrapErr names the operation and agent in an engine error, leaving the
// runtime's own errors (not found, closed), which say so already.
func wrapErr(op, agentID string, err error) error {
	if err == nil || errors.Is(err, runtime.ErrNotFound) || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("docker runtime: %s %s: %w", op, agentID, err)
}
