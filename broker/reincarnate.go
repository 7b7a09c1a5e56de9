package broker

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// clearForReincarnation readies an agent for its next generation here: its
// container goes (whatever run it holds: the Hub decided the new one), its
// ports are released, and its home is removed so that the create rebuilds
// it from the harness. Its workspace is not touched.
func (b *Broker) clearForReincarnation(ctx context.Context, spec wire.AgentSpec) error {
	// On Kubernetes a per-agent workspace off the NFS share is a claim
	// of the agent's own, which goes with its pod: the next generation
	// would start with an empty one. Refused before anything is removed.
	if b.rt.Name() == "kubernetes" && spec.SharingMode != api.SharingSharedWorkspace &&
		!spec.ConfirmWorkspace && b.placement(spec.AgentID) != workspace.PlacementExport {
		return api.Conflict(api.CodeConflict, "agent %s's %s workspace is a claim of its own pod on runtime broker %s, which a reincarnation in place would not keep: keep workspaces on the NFS share (nfs_pv_name) to reincarnate agents in place",
			spec.AgentID, cmp.Or(spec.SharingMode, api.SharingEmptyPerAgent), b.cfg.Name)
	}
	if err := b.rt.Delete(ctx, spec.AgentID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return err
	}
	b.ports.Release(spec.AgentID)
	return b.removeHome(b.layout.AgentDir(spec.ProjectID, spec.AgentID))
}

// removeHome removes the home in agent directory dir (a symlink there is
// removed, not followed), judging dir where it leads first.
func (b *Broker) removeHome(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := b.layout.SafeDir(dir); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(dir, "home"))
}

// keptWorkspace is the agent's recorded workspace when the create keeps
// it (a reincarnation, a create sent again for an agent that ran): kept
// is false when the agent has none (the create makes a fresh one). A
// workspace that is there but cannot be kept refuses the create rather
// than be cleared by a fresh one.
func (b *Broker) keptWorkspace(spec wire.AgentSpec) (dir string, kept bool, err error) {
	if !spec.Reincarnate && !spec.KeepWorkspace {
		return "", false, nil
	}
	k, ok := b.ws.(WorkspaceKeeper)
	if !ok {
		return "", false, nil
	}
	dir, err = k.Kept(spec)
	switch {
	case errors.Is(err, workspace.ErrNoWorkspace):
		return "", false, nil
	case err != nil:
		return "", false, api.Conflict(api.CodeConflict, "%v", err)
	}
	return dir, true, nil
}

// WorkspaceKeeper is implemented by Workspaces that can hand a create the
// workspace an agent already has (workspace.Git.Kept).
type WorkspaceKeeper interface {
	Kept(spec wire.AgentSpec) (string, error)
}
