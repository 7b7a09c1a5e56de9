package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/scion-go/scion/wire"
)

// prepareClone clones the remote into the agent's directory.
func (w *GitWorkspaces) prepareClone(ctx context.Context, spec wire.AgentSpec, agentDir string, rec *WorkspaceRecord) error {
	args := []string{"clone", "--quiet"}
	if d := w.cfg.CloneDepth; d > 0 {
		args = append(args, "--depth", strconv.Itoa(d))
		rec.CloneDepth = d
	}
	rec.Path = filepath.Join(agentDir, "workspace")
	return w.cloneInto(ctx, spec.GitRemote, agentDir, rec.Path, args...)
}

// prepareShared hands the agent the project's one checkout, cloning it if
// this is the project's first agent here. An existing checkout is never
// fetched or reset: it is the agents' working copy, not the broker's.
func (w *GitWorkspaces) prepareShared(ctx context.Context, spec wire.AgentSpec, agentDir string, rec *WorkspaceRecord) error {
	unlock, err := w.projects.lock(ctx, spec.ProjectID)
	if err != nil {
		return err
	}
	defer unlock()
	dir := w.layout.sharedDir(spec.ProjectID)
	if err := w.ensureClone(ctx, spec.GitRemote, agentDir, dir, "clone", "--quiet"); err != nil {
		return err
	}
	rec.Path = dir
	return nil
}

// ensureClone clones remote to dest unless a clone is there already. A
// directory there that is not a clone is refused rather than replaced:
// it may hold someone's work.
func (w *GitWorkspaces) ensureClone(ctx context.Context, remote, tmpParent, dest string, args ...string) error {
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
	return w.cloneInto(ctx, remote, tmpParent, dest, args...)
}

// cloneInto runs git clone into a temporary directory under tmpParent (the
// agent's directory, so an interrupted clone goes with the agent) and
// renames it to dest only once complete: dest is either a whole clone or
// absent.
func (w *GitWorkspaces) cloneInto(ctx context.Context, remote, tmpParent, dest string, args ...string) error {
	tmp, err := os.MkdirTemp(tmpParent, "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return err
	}
	if _, err := w.git.run(ctx, "", append(args, "--", remote, tmp)...); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("cloning %s: %w", redactURLs(remote), err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	return nil
}
