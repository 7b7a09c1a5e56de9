package broker

import (
	"context"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// cleanupProject handles project.cleanup: the Hub has deleted the project
// (so it has no agents left) and asks the runtime to remove what it keeps
// for the project beyond any agent. A runtime that keeps nothing of the
// kind (no runtime.ProjectCleaner) answers that it removed nothing. It is
// idempotent by nature: a repeat finds nothing left to remove.
func (b *Broker) cleanupProject(ctx context.Context, req *wire.Request) (any, error) {
	var ref wire.ProjectRef
	if err := req.Decode(&ref); err != nil {
		return nil, api.BadRequest("%s: %v", req.Method, err)
	}
	if err := workspace.ValidID("project ID", ref.ProjectID); err != nil {
		return nil, err
	}
	out := wire.ProjectCleanup{Removed: []string{}}
	pc, ok := b.rt.(runtime.ProjectCleaner)
	if !ok {
		return out, nil
	}
	removed, err := pc.CleanupProject(ctx, ref.ProjectID)
	out.Removed = append(out.Removed, removed...)
	if err != nil {
		b.log.Warn("project cleanup", "project_id", ref.ProjectID, "removed", removed, "err", err)
		if ctx.Err() != nil {
			return nil, workspace.ContextError(ctx.Err())
		}
		e := api.Errorf(api.CodeRuntimeError, "%s runtime: project cleanup: %v", b.rt.Name(), err)
		return nil, e.WithDetail("runtime", b.rt.Name()).WithDetail("removed", removed)
	}
	b.log.Info("project cleanup", "project_id", ref.ProjectID, "removed", removed)
	return out, nil
}
