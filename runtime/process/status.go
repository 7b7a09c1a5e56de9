package process

import (
	"context"
	"errors"
	"maps"
	"os"

	"github.com/scion-go/scion/runtime"
)

// status derives the agent's live status from its record, /proc and the
// exitcode file. It takes no lock: it only reads, and every file it reads
// is replaced atomically.
func (r *Runtime) status(id string, rec *record) runtime.Status {
	st := runtime.Status{
		AgentID:   rec.Spec.AgentID,
		RunID:     rec.Spec.RunID,
		StartedAt: rec.StartedAt,
		Labels:    maps.Clone(rec.Labels),
	}
	if rec.Proc.Pid == 0 {
		st.State = runtime.StateCreated
		return st
	}
	// Check liveness before reading the exit status: the wrapper writes the
	// file before it exits, so once it is dead the file is complete.
	alive, stopped := probe(rec.Proc)
	switch {
	case stopped:
		st.State = runtime.StatePaused
	case alive:
		st.State = runtime.StateRunning
	default:
		st.State = runtime.StateExited
		if code, at, ok := r.readExit(id); ok {
			st.ExitCode = &code
			// File times come from a coarse kernel clock that can lag
			// by a tick; never report an exit before the start.
			st.FinishedAt = at
			if at.Before(rec.StartedAt) {
				st.FinishedAt = rec.StartedAt
			}
		} else {
			st.Message = "exit status unknown: the process was killed before it could be recorded"
		}
	}
	return st
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, agentID string) (runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return runtime.Status{}, err
	}
	rec, err := r.load(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	return r.status(agentID, rec), nil
}

// Inventory implements runtime.Runtime: every agent recorded in the state
// directory, in agent ID order. Directories without a record (a Create cut
// short by a crash) are skipped; an unreadable record is listed as
// StateMissing with the error as Message.
func (r *Runtime) Inventory(ctx context.Context) ([]runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	recs, err := r.records(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Status, 0, len(recs))
	for _, ar := range recs {
		if ar.err != nil {
			// Listed rather than hidden, so that someone notices and
			// can Delete it.
			out = append(out, runtime.Status{AgentID: ar.id, State: runtime.StateMissing, Message: ar.err.Error()})
			continue
		}
		out = append(out, r.status(ar.id, ar.rec))
	}
	return out, nil
}

// agentRecord is one agent's record, or why it could not be read.
type agentRecord struct {
	id  string
	rec *record
	err error
}

// records loads every agent record in the state directory.
func (r *Runtime) records(ctx context.Context) ([]agentRecord, error) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, err
	}
	var out []agentRecord
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		rec, err := r.load(e.Name())
		if errors.Is(err, runtime.ErrNotFound) {
			continue // not created yet, or deleted meanwhile
		}
		out = append(out, agentRecord{e.Name(), rec, err})
	}
	return out, nil
}
