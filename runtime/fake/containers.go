package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/scion-go/scion/runtime"
)

// Create implements runtime.Runtime.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	if err := r.enter(ctx, "Create"); err != nil {
		return runtime.Status{}, err
	}
	if spec.AgentID == "" {
		return runtime.Status{}, errors.New("fake: Create: empty AgentID")
	}
	// Keep our own copies so that the caller changing its maps later does
	// not change the container.
	spec.Labels = maps.Clone(spec.Labels)
	spec.Env = maps.Clone(spec.Env)
	spec.Command = slices.Clone(spec.Command)
	c := &container{
		spec:   spec,
		labels: runtime.SpecLabels(spec),
		status: runtime.Status{AgentID: spec.AgentID, RunID: spec.RunID, State: runtime.StateCreated},
	}
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	if _, ok := r.eng.containers[spec.AgentID]; ok {
		return runtime.Status{}, fmt.Errorf("fake: Create: agent %q already exists", spec.AgentID)
	}
	r.eng.containers[spec.AgentID] = c
	return c.snapshot(), nil
}

// Start implements runtime.Runtime. Starting an exited container runs it
// again; starting a running or paused one changes nothing.
func (r *Runtime) Start(ctx context.Context, agentID string) (runtime.Status, error) {
	if err := r.enter(ctx, "Start"); err != nil {
		return runtime.Status{}, err
	}
	r.eng.mu.Lock()
	c, err := r.eng.get(agentID)
	if err != nil {
		r.eng.mu.Unlock()
		return runtime.Status{}, err
	}
	if c.live() {
		defer r.eng.mu.Unlock()
		return c.snapshot(), nil
	}
	now := time.Now()
	c.status.State = runtime.StateRunning
	c.status.ExitCode = nil
	c.status.StartedAt = now
	c.status.FinishedAt = time.Time{}
	st := c.snapshot()
	spec, output := c.spec, r.eng.startOutput
	r.eng.mu.Unlock()

	// The output callback is the test's code: call it without the lock,
	// so that it may block or call back into the runtime.
	text := output(spec)
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	if !c.deleted && c.status.StartedAt.Equal(now) { // still this run
		c.log = append(c.log, text...)
		c.notify()
	}
	return st, nil
}

// Stop implements runtime.Runtime. A container set up to ignore SIGTERM
// (SetIgnoreTerm) keeps running for the whole grace period.
func (r *Runtime) Stop(ctx context.Context, agentID string, grace time.Duration) (runtime.Status, error) {
	if err := r.enter(ctx, "Stop"); err != nil {
		return runtime.Status{}, err
	}
	r.eng.mu.Lock()
	c, err := r.eng.get(agentID)
	if err != nil {
		r.eng.mu.Unlock()
		return runtime.Status{}, err
	}
	if !c.live() {
		defer r.eng.mu.Unlock()
		return c.snapshot(), nil
	}
	spec, ignoreTerm := c.spec, r.eng.ignoreTerm
	r.eng.mu.Unlock()

	code := ExitCodeTerm
	if ignoreTerm(spec) {
		// Sit out the grace period, like a real runtime waiting for a
		// process that ignores SIGTERM, then kill.
		code = ExitCodeKill
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return runtime.Status{}, ctx.Err()
		}
	}
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	if c.deleted {
		return runtime.Status{}, fmt.Errorf("fake: agent %q: %w", agentID, runtime.ErrNotFound)
	}
	if c.live() {
		r.eng.exit(c, code)
	}
	return c.snapshot(), nil
}

// Suspend implements runtime.Runtime.
func (r *Runtime) Suspend(ctx context.Context, agentID string) (runtime.Status, error) {
	return r.pause(ctx, "Suspend", agentID, runtime.StateRunning, runtime.StatePaused)
}

// Resume implements runtime.Runtime.
func (r *Runtime) Resume(ctx context.Context, agentID string) (runtime.Status, error) {
	return r.pause(ctx, "Resume", agentID, runtime.StatePaused, runtime.StateRunning)
}

// pause moves a live container from state from to state to; a container
// already in to is left alone.
func (r *Runtime) pause(ctx context.Context, method, agentID, from, to string) (runtime.Status, error) {
	if err := r.enter(ctx, method); err != nil {
		return runtime.Status{}, err
	}
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	c, err := r.eng.get(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	switch c.status.State {
	case to:
	case from:
		c.status.State = to
		c.notify()
	default:
		return runtime.Status{}, fmt.Errorf("fake: %s: agent %q is %s", strings.ToLower(method), agentID, c.status.State)
	}
	return c.snapshot(), nil
}

// Delete implements runtime.Runtime. A live container is removed without
// an exit event: whoever deletes it knows it is gone.
func (r *Runtime) Delete(ctx context.Context, agentID string) error {
	if err := r.enter(ctx, "Delete"); err != nil {
		return err
	}
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	c, err := r.eng.get(agentID)
	if err != nil {
		return err
	}
	delete(r.eng.containers, agentID)
	c.deleted = true
	c.notify()
	return nil
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, agentID string) (runtime.Status, error) {
	if err := r.enter(ctx, "Inspect"); err != nil {
		return runtime.Status{}, err
	}
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	c, err := r.eng.get(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	return c.snapshot(), nil
}

// Inventory implements runtime.Runtime, sorted by agent ID.
func (r *Runtime) Inventory(ctx context.Context) ([]runtime.Status, error) {
	if err := r.enter(ctx, "Inventory"); err != nil {
		return nil, err
	}
	r.eng.mu.Lock()
	out := make([]runtime.Status, 0, len(r.eng.containers))
	for _, c := range r.eng.containers {
		out = append(out, c.snapshot())
	}
	r.eng.mu.Unlock()
	slices.SortFunc(out, func(a, b runtime.Status) int { return strings.Compare(a.AgentID, b.AgentID) })
	return out, nil
}
