package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scion-go/scion/wire"
)

// branchPrefix namespaces the agents' branches in the base clone.
const branchPrefix = "scion/"

// prepareWorktree adds the agent's worktree over the project's base clone,
// on a new branch from the remote's default branch as just fetched. The
// whole of it holds the project lock: worktree registrations (and the
// names git derives for them) race otherwise.
func (w *Git) prepareWorktree(ctx context.Context, spec wire.AgentSpec, src gitSource, agentDir string, began time.Time, rec *Record) error {
	unlock, err := w.projects.lock(ctx, spec.ProjectID)
	if err != nil {
		return err
	}
	defer unlock()
	gitDir, err := w.ensureBase(ctx, spec, src, agentDir, began)
	if err != nil {
		return err
	}
	commit, err := w.remoteHead(ctx, gitDir)
	if err != nil {
		return err
	}
	branch, err := w.freeBranch(ctx, gitDir, spec)
	if err != nil {
		return err
	}
	rec.Path = filepath.Join(agentDir, "workspace")
	rec.Branch, rec.BaseCommit, rec.GitCommonDir = branch, commit, gitDir
	// Recorded first, so that a failure from here on (or a crash) is
	// cleaned up knowing the branch.
	if err := writeRecord(agentDir, *rec); err != nil {
		return err
	}
	if _, err := w.git.run(ctx, "", "--git-dir="+gitDir, "worktree", "add", "--quiet", "-b", branch, "--", rec.Path, commit); err != nil {
		return fmt.Errorf("adding the worktree on branch %s: %w", branch, err)
	}
	return nil
}

// ensureBase makes sure the project's base clone exists and is fresh, and
// returns its git directory. A fetch that began after this create began
// (while it waited for the lock) already brought what this one would, so
// concurrent creates share it instead of fetching one after another.
func (w *Git) ensureBase(ctx context.Context, spec wire.AgentSpec, src gitSource, tmpParent string, began time.Time) (string, error) {
	base := w.layout.BaseDir(spec.ProjectID)
	gitDir := filepath.Join(base, ".git")
	if _, err := os.Stat(gitDir); errors.Is(err, fs.ErrNotExist) {
		start := time.Now()
		// The base clone's own checkout is never used: agents work in
		// worktrees of it.
		if err := w.ensureClone(ctx, src, tmpParent, base, "clone", "--quiet", "--no-checkout"); err != nil {
			return "", err
		}
		w.setFetched(spec.ProjectID, start)
		return gitDir, nil
	} else if err != nil {
		return "", err
	}
	if src.err != nil {
		return "", fmt.Errorf("fetching %s into the base clone: %w", redactURLs(spec.GitRemote), src.err)
	}
	// Also points origin at the project's current remote, which may have
	// been changed since the clone (a local one at the path it resolved
	// to just now, so that git does not resolve it again itself).
	if err := w.sanitizeBaseConfig(ctx, gitDir, src.url); err != nil {
		return "", err
	}
	// Forget worktrees whose directories are gone (an agent directory
	// removed by hand): their registrations block adding one at that path.
	if _, err := w.git.run(ctx, "", "--git-dir="+gitDir, "worktree", "prune"); err != nil {
		return "", err
	}
	if w.fetchedSince(spec.ProjectID, began) {
		return gitDir, nil
	}
	start := time.Now()
	// A failed fetch fails the create rather than starting the agent on a
	// stale commit without anyone knowing: a remote that stopped answering
	// usually means a changed URL or revoked credentials.
	if _, err := w.git.run(ctx, "", "--git-dir="+gitDir, "fetch", "--quiet", "--prune", "--no-recurse-submodules", "origin"); err != nil {
		return "", fmt.Errorf("fetching %s into the base clone: %w", redactURLs(spec.GitRemote), err)
	}
	if err := w.verify(src); err != nil {
		return "", err
	}
	w.setFetched(spec.ProjectID, start)
	return gitDir, nil
}

func (w *Git) fetchedSince(projectID string, t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fetched[projectID].After(t)
}

func (w *Git) setFetched(projectID string, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.After(w.fetched[projectID]) {
		w.fetched[projectID] = t
	}
}

// remoteHead is the commit of the remote's default branch in the base
// clone. origin/HEAD is set when cloning; if the default branch has since
// been renamed it dangles, and is asked of the remote again.
func (w *Git) remoteHead(ctx context.Context, gitDir string) (string, error) {
	head := func() (string, error) {
		out, err := w.git.run(ctx, "", "--git-dir="+gitDir, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/HEAD^{commit}")
		return strings.TrimSpace(out), err
	}
	c, err := head()
	if err != nil && ctx.Err() == nil {
		if _, serr := w.git.run(ctx, "", "--git-dir="+gitDir, "remote", "set-head", "origin", "--auto"); serr == nil {
			c, err = head()
		}
	}
	if err != nil || c == "" {
		return "", fmt.Errorf("the git remote has no default branch to start the worktree from (is the repository empty?)")
	}
	return c, nil
}

// freeBranch picks the agent's branch: scion/<slug>, or, when a branch of
// that name is still there (kept from a deleted agent with the same slug
// because it had unpushed commits), one qualified by the agent ID. An
// existing branch is never reused or reset: it may hold someone's work.
func (w *Git) freeBranch(ctx context.Context, gitDir string, spec wire.AgentSpec) (string, error) {
	name := refSafe(spec.Slug)
	id := refSafe(spec.AgentID)
	if name == "" {
		name = id
	}
	if name == "" {
		name = "agent"
	}
	cands := []string{name}
	if id != "" && id != name {
		cands = append(cands, name+"-"+id[:min(8, len(id))], name+"-"+id)
	}
	last := cands[len(cands)-1]
	for n := 2; n <= 9; n++ {
		cands = append(cands, fmt.Sprintf("%s-%d", last, n))
	}
	for _, c := range cands {
		b := branchPrefix + c
		_, err := w.git.run(ctx, "", "--git-dir="+gitDir, "show-ref", "--verify", "--quiet", "refs/heads/"+b)
		switch {
		case err == nil: // taken
		case exitCode(err) == 1:
			return b, nil
		default:
			return "", err
		}
	}
	return "", fmt.Errorf("no free branch name for agent %s: %s%s and its variants all exist", spec.AgentID, branchPrefix, name)
}

// refSafe reduces s to letters, digits, '-' and '_' (anything else becomes
// '-'), so that it is a valid ref component and can never be read as an
// option or a revision expression.
func refSafe(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > 64 {
		out = strings.TrimRight(out[:64], "-")
	}
	return out
}

// removeWorktree deregisters and deletes the agent's worktree and deletes
// its branch when that loses nothing. Uncommitted changes in the worktree
// go with it, as everything else of a deleted agent does.
func (w *Git) removeWorktree(ctx context.Context, projectID, agentDir string, rec Record) error {
	unlock, err := w.projects.lock(ctx, projectID)
	if err != nil {
		return err
	}
	defer unlock()
	gitDir := filepath.Join(w.layout.BaseDir(projectID), ".git")
	if _, err := os.Stat(gitDir); err != nil {
		return nil // no base clone: the caller removes the directory
	}
	if err := w.sanitizeBaseConfig(ctx, gitDir, ""); err != nil {
		return err
	}
	// The path is computed, not taken from the record, so only this
	// agent's worktree can be named here.
	ws := filepath.Join(agentDir, "workspace")
	if fi, err := os.Lstat(ws); err == nil && fi.IsDir() {
		// Twice forced: also when the agent locked its worktree.
		if _, err := w.git.run(ctx, "", "--git-dir="+gitDir, "worktree", "remove", "--force", "--force", "--", ws); err != nil {
			w.log.Warn("git worktree remove failed; removing the directory and pruning", "dir", ws, "err", err)
		}
	}
	if err := w.removeInside(agentDir, ws); err != nil {
		return err
	}
	if _, err := w.git.run(ctx, "", "--git-dir="+gitDir, "worktree", "prune"); err != nil {
		return err
	}
	w.dropBranch(ctx, gitDir, rec)
	return nil
}

// dropBranch deletes the agent's branch if every commit on it is also in
// the commit it started from or in the same branch on the remote (pushed
// from the worktree, which updates the base clone's remote-tracking ref).
// A branch with commits found nowhere else is kept, so deleting an agent
// never loses committed work; it stays in the base clone as scion/<slug>
// until someone deletes it.
func (w *Git) dropBranch(ctx context.Context, gitDir string, rec Record) {
	name, ok := strings.CutPrefix(rec.Branch, branchPrefix)
	if !ok || name == "" || refSafe(name) != name {
		return // not a branch this broker made
	}
	ref := "refs/heads/" + rec.Branch
	out, err := w.git.run(ctx, "", "--git-dir="+gitDir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return // already gone
	}
	tip := strings.TrimSpace(out)
	for _, keeper := range []string{rec.BaseCommit, "refs/remotes/origin/" + rec.Branch} {
		if keeper == "" {
			continue
		}
		if _, err := w.git.run(ctx, "", "--git-dir="+gitDir, "merge-base", "--is-ancestor", tip, keeper); err != nil {
			continue
		}
		// Deleted only if it still points where it was checked.
		if _, err := w.git.run(ctx, "", "--git-dir="+gitDir, "update-ref", "-d", ref, tip); err != nil {
			w.log.Warn("delete agent branch", "branch", rec.Branch, "err", err)
		}
		return
	}
	w.log.Info("kept the branch of a deleted agent: it has commits that are neither in its base nor pushed",
		"branch", rec.Branch, "agent", rec.AgentID, "base_clone", filepath.Dir(gitDir))
}
