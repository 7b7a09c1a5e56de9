package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// prepareClone clones the remote into the agent's directory.
func (w *Git) prepareClone(ctx context.Context, src gitSource, agentDir string, rec *Record) error {
	args := []string{"clone", "--quiet"}
	if d := w.cfg.CloneDepth; d > 0 {
		args = append(args, "--depth", strconv.Itoa(d))
		rec.CloneDepth = d
	}
	rec.Path = filepath.Join(agentDir, "workspace")
	return w.cloneInto(ctx, src, agentDir, rec.Path, args...)
}

// prepareShared hands the agent the project's one checkout, cloning it if
// this is the project's first agent here. An existing checkout is never
// fetched or reset: it is the agents' working copy, not the broker's.
func (w *Git) prepareShared(ctx context.Context, spec wire.AgentSpec, src gitSource, agentDir string, rec *Record) error {
	unlock, err := w.projects.lock(ctx, spec.ProjectID)
	if err != nil {
		return err
	}
	defer unlock()
	dir := w.shared.SharedDir(spec.ProjectID)
	tmpParent := agentDir
	if w.cfg.Export != nil {
		if err := w.cfg.Export.Usable(); err != nil {
			return err
		}
		// The clone is renamed into place, which cannot cross from the
		// local disk onto the export's mount: clone next to it instead
		// (a clone cut short there is left behind; a later one of the
		// project's first agent on any broker is made beside it).
		tmpParent = filepath.Dir(dir)
		if err := os.MkdirAll(tmpParent, 0o755); err != nil {
			return err
		}
		// Others write on the export: judged again where it leads now,
		// after the directories were made, before anything is cloned there.
		if err := w.shared.safeDirs(tmpParent, dir); err != nil {
			return err
		}
		rec.Storage = StorageNFS
	}
	if confirming(spec) {
		// A moved agent's checkout is already on the export, where the
		// broker it left made it: confirmed through this broker's mount,
		// never made again (an empty clone in its place would hide the
		// agent's uncommitted work, which is somewhere else).
		if err := w.confirmMoved(spec, dir); err != nil {
			return err
		}
	} else if err := w.ensureClone(ctx, src, tmpParent, dir, "clone", "--quiet"); err != nil {
		return err
	}
	rec.Path = dir
	return nil
}

// confirmMoved checks that a moved agent's shared checkout is at dir on
// this broker's export. The refusal names the workspace by its place in
// the export, not by this host's mount path.
func (w *Git) confirmMoved(spec wire.AgentSpec, dir string) error {
	rel := path.Join("projects", spec.ProjectID, "shared")
	if w.cfg.Export == nil {
		return api.Conflict(api.CodeMoveRefused, "moved agent %s: its workspace %s is on an NFS export, and this broker keeps workspaces on its local disk",
			spec.AgentID, rel)
	}
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	if err != nil || !fi.IsDir() {
		return api.Conflict(api.CodeMoveRefused, "moved agent %s: its workspace %s is not visible through this broker's mount of the export: check that the export is mounted and the workspace is there",
			spec.AgentID, rel)
	}
	return nil
}

// ensureClone clones remote to dest unless a clone is there already. A
// directory there that is not a clone is refused rather than replaced:
// it may hold someone's work.
func (w *Git) ensureClone(ctx context.Context, src gitSource, tmpParent, dest string, args ...string) error {
	_, err := os.Stat(filepath.Join(dest, ".git"))
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("%s exists but is not a git clone; move it away to have it cloned again", dest)
	}
	return w.cloneInto(ctx, src, tmpParent, dest, args...)
}

// cloneInto runs git clone into a temporary directory under tmpParent (the
// agent's directory, so an interrupted clone goes with the agent) and
// renames it to dest only once complete: dest is either a whole clone or
// absent. A local source is cloned with --no-local, through the pack
// protocol: only the objects its refs reach, copied, where a local clone
// would hard-link or copy its object files whatever they are; and it is
// checked again once the clone is done.
func (w *Git) cloneInto(ctx context.Context, src gitSource, tmpParent, dest string, args ...string) error {
	if src.err != nil {
		return fmt.Errorf("cloning %s: %w", redactURLs(src.url), src.err)
	}
	tmp, err := os.MkdirTemp(tmpParent, "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return err
	}
	if src.local != nil {
		args = append(slices.Clone(args), "--no-local")
	}
	if _, err := w.git.run(ctx, "", append(args, "--", src.url, tmp)...); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("cloning %s: %w", redactURLs(src.url), err)
	}
	if err := w.verify(src); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		_ = os.RemoveAll(tmp)
		// Another broker on the same export cloned the shared checkout
		// first (the project lock is this process's): take theirs.
		if _, serr := os.Stat(filepath.Join(dest, ".git")); serr == nil {
			return nil
		}
		return err
	}
	return nil
}

// prepareOnExport makes a clone-per-agent or empty-per-agent workspace on
// the export (Export.PerAgent), at the agent's export directory, or, for
// a moved agent, confirms it is there through this broker's mount.
func (w *Git) prepareOnExport(ctx context.Context, spec wire.AgentSpec, src gitSource, mode string, rec *Record) error {
	if err := w.cfg.Export.Usable(); err != nil {
		return err
	}
	dir := w.shared.ExportAgentDir(spec.AgentID)
	ws := filepath.Join(dir, "workspace")
	rec.Storage, rec.Path = StorageNFS, ws
	if confirming(spec) {
		want := ws
		if mode == api.SharingClonePerAgent {
			want = filepath.Join(ws, ".git")
		}
		if fi, err := os.Lstat(want); err != nil || !fi.IsDir() {
			return api.Conflict(api.CodeMoveRefused, "moved agent %s: its workspace %s is not visible through this broker's mount of the export: check that the export is mounted and the workspace is there",
				spec.AgentID, path.Join("agents", spec.AgentID, "workspace"))
		}
		return w.shared.safeDirs(ws)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Others write on the export: judged where it leads, before anything
	// is made there. A new agent's workspace is fresh: a leftover of an
	// earlier create of it goes.
	if err := w.shared.safeDirs(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(ws); err != nil {
		return err
	}
	if mode == api.SharingEmptyPerAgent {
		return os.Mkdir(ws, 0o755)
	}
	args := []string{"clone", "--quiet"}
	if d := w.cfg.CloneDepth; d > 0 {
		args = append(args, "--depth", strconv.Itoa(d))
		rec.CloneDepth = d
	}
	return w.cloneInto(ctx, src, dir, ws, args...)
}

// removeOnExport removes the agent's directory on the export, which holds
// its per-agent workspace (Export.PerAgent): named by the agent's ID, the
// path computed, never read from a record, and judged where it leads.
func (w *Git) removeOnExport(agentID string) error {
	if err := ValidID("agent ID", agentID); err != nil {
		return err
	}
	dir := w.shared.ExportAgentDir(agentID)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := w.shared.safeDirs(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// confirming reports whether the create's workspace is on the export
// already, to be confirmed there and never made: a moved agent's, or one
// whose placement the Hub knows to be the export.
func confirming(spec wire.AgentSpec) bool { return spec.Moved || spec.ConfirmWorkspace }
