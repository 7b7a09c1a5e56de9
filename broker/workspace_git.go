package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// GitWorkspacesConfig configures GitWorkspaces; the zero value is usable.
type GitWorkspacesConfig struct {
	// CloneDepth is the history depth of clone-per-agent clones: 0 clones
	// everything, N > 0 runs git clone --depth N. It is one setting for the
	// whole broker for now; the spec's per-project clone depth (an
	// agent_defaults entry) will override it once the Hub sends one.
	CloneDepth int
	// Git is the git binary (default: git on PATH).
	Git string
	// Env adds variables to git's reduced environment, such as a
	// GIT_SSH_COMMAND that names a deploy key.
	Env []string
	// AllowLocalRemotes lets projects use a path on the broker's host (or
	// a file:// URL) as their git remote (server.broker.allow_local_git_remotes).
	// Off by default: whoever may set a project's remote could otherwise
	// read any repository the broker's user can, another project's base
	// clone included. Even when on, nothing inside the broker's data
	// directory is ever a remote.
	AllowLocalRemotes bool
	Logger            *slog.Logger
}

// GitWorkspaces makes each agent's workspace the way its project's sharing
// mode asks (spec.SharingMode; empty means empty-per-agent):
//
//   - empty-per-agent: an empty directory, agents/<agentID>/workspace.
//   - clone-per-agent: a clone of the project's remote at the same place,
//     of CloneDepth commits when that is set.
//   - worktree-per-agent: a worktree on the agent's own branch
//     (scion/<slug>) at the same place, over one base clone per project
//     (projects/<projectID>/base) that later creates fetch into.
//   - shared-workspace: one checkout per project (projects/<projectID>/shared),
//     cloned by the first agent and handed to every agent as is.
//
// Removing an agent removes what is its alone: its worktree, its clone,
// its empty directory. The base clone and the shared checkout belong to
// the project and are never removed automatically, not even with the
// project's last agent: the shared checkout holds the agents' common work,
// and the base clone keeps the branches of deleted agents that had
// commits nobody pushed.
type GitWorkspaces struct {
	layout layout
	cfg    GitWorkspacesConfig
	git    gitRunner
	log    *slog.Logger
	// projects serializes the work on a project's base clone and shared
	// checkout: cloning, fetching, and adding and removing worktrees, whose
	// registrations in the common git directory are not safe to race.
	projects agentLocks

	mu      sync.Mutex
	fetched map[string]time.Time // when the last good fetch of a base clone began
}

// NewGitWorkspaces makes workspaces under dataDir, the broker's data
// directory.
func NewGitWorkspaces(dataDir string, cfg GitWorkspacesConfig) (*GitWorkspaces, error) {
	if dataDir == "" {
		return nil, errors.New("workspaces: data directory is required")
	}
	if cfg.CloneDepth < 0 {
		return nil, fmt.Errorf("workspaces: clone depth %d is negative", cfg.CloneDepth)
	}
	root, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("workspaces: data directory: %w", err)
	}
	cfg.Git = cmp.Or(cfg.Git, "git")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &GitWorkspaces{
		layout:  layout{root: root},
		cfg:     cfg,
		git:     newGitRunner(cfg.Git, append(slices.Clone(cfg.Env), allowedProtocols(cfg.AllowLocalRemotes))),
		log:     cfg.Logger,
		fetched: map[string]time.Time{},
	}, nil
}

// Storage reports where workspaces are: on the broker's local disk.
func (w *GitWorkspaces) Storage() WorkspaceStorage {
	return WorkspaceStorage{Type: StorageLocal}
}

// Workspace returns the record of the agent's workspace.
func (w *GitWorkspaces) Workspace(agentID string) (WorkspaceRecord, error) {
	dirs, err := w.layout.findAgentDirs(agentID)
	if err != nil {
		return WorkspaceRecord{}, err
	}
	for _, d := range dirs {
		if rec, ok, err := readRecord(d); err != nil || ok {
			return rec, err
		}
	}
	return WorkspaceRecord{}, api.NotFound(api.CodeAgentNotFound, "no workspace recorded for agent %s", agentID)
}

// Prepare makes the agent's workspace and records it. On failure it leaves
// nothing of the agent's behind (a base clone or shared checkout that was
// already there stays as it was).
func (w *GitWorkspaces) Prepare(ctx context.Context, spec wire.AgentSpec) (string, error) {
	began := time.Now()
	mode := cmp.Or(spec.SharingMode, api.SharingEmptyPerAgent)
	if !api.ValidSharingMode(mode) {
		return "", api.BadRequest("unknown sharing mode %q: use %s, %s, %s or %s", mode,
			api.SharingWorktreePerAgent, api.SharingSharedWorkspace, api.SharingClonePerAgent, api.SharingEmptyPerAgent)
	}
	if err := validID("project ID", spec.ProjectID); err != nil {
		return "", err
	}
	if err := validID("agent ID", spec.AgentID); err != nil {
		return "", err
	}
	if mode != api.SharingEmptyPerAgent {
		if err := w.checkRemote(spec, mode); err != nil {
			return "", err
		}
	}
	agentDir := w.layout.agentDir(spec.ProjectID, spec.AgentID)
	if err := w.layout.safeDirs(agentDir, w.layout.baseDir(spec.ProjectID), w.layout.sharedDir(spec.ProjectID)); err != nil {
		return "", err
	}
	// The agent's directory is private to the broker's user: the home
	// in it holds the agent's credentials, and the workspace its code.
	// A new agent's is made here, in one mkdir (its project's first agent:
	// with its parents).
	mkErr := os.Mkdir(agentDir, 0o700)
	if errors.Is(mkErr, fs.ErrNotExist) {
		mkErr = os.MkdirAll(agentDir, 0o700)
	}
	madeDir := mkErr == nil
	if !madeDir {
		if !errors.Is(mkErr, fs.ErrExist) {
			return "", w.describe(spec, mode, mkErr)
		}
		// A create means a fresh workspace: clear what an earlier create
		// of this agent left (a crash mid-create, a container removed by
		// hand). The agent's directory may exist without one (a harness's
		// home files are written first), so look for a workspace or a
		// record rather than the directory: a new agent has neither, and
		// there is nothing to clear.
		if w.hasWorkspace(agentDir) {
			if err := w.removeIn(ctx, spec.ProjectID, agentDir); err != nil {
				return "", w.describe(spec, mode, err)
			}
		}
		if err := os.MkdirAll(agentDir, 0o700); err != nil {
			return "", w.describe(spec, mode, err)
		}
	}

	rec := WorkspaceRecord{AgentID: spec.AgentID, ProjectID: spec.ProjectID, Mode: mode,
		Storage: StorageLocal, CreatedAt: time.Now().UTC()}
	var err error
	switch mode {
	case api.SharingEmptyPerAgent:
		rec.Path = filepath.Join(agentDir, "workspace")
		if err = os.Mkdir(rec.Path, 0o755); err != nil {
			err = os.MkdirAll(rec.Path, 0o755) // there already, or an error to report
		}
	case api.SharingClonePerAgent:
		err = w.prepareClone(ctx, spec, agentDir, &rec)
	case api.SharingSharedWorkspace:
		err = w.prepareShared(ctx, spec, agentDir, &rec)
	case api.SharingWorktreePerAgent:
		err = w.prepareWorktree(ctx, spec, agentDir, began, &rec)
	}
	if err == nil && mode != api.SharingWorktreePerAgent { // a worktree's is written before git runs
		err = writeRecord(agentDir, rec)
	}
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := w.removeIn(cctx, spec.ProjectID, agentDir); rerr != nil {
			w.log.Warn("undo workspace", "agent", spec.AgentID, "err", redactURLs(rerr.Error()))
		}
		if madeDir {
			if rerr := w.removeInside(w.layout.root, agentDir); rerr != nil {
				w.log.Warn("undo workspace", "agent", spec.AgentID, "err", rerr)
			}
		}
		return "", w.describe(spec, mode, err)
	}
	// An empty workspace is two directories and a file: at Debug, so that
	// a busy broker does not write a log line per create. The git modes,
	// which clone or check out, say so at Info.
	level := slog.LevelInfo
	if mode == api.SharingEmptyPerAgent {
		level = slog.LevelDebug
	}
	w.log.Log(ctx, level, "workspace ready", "agent", spec.AgentID, "project", spec.ProjectID, "mode", mode, "path", rec.Path, "branch", rec.Branch)
	return rec.Path, nil
}

// checkRemote refuses a git mode without a usable remote before anything
// is made: the Hub checks the same rule (api.GitRemoteTransport) when the
// remote is set, and the broker again, since whether a local path is
// allowed is its own setting, and a Hub of an older version may not check.
func (w *GitWorkspaces) checkRemote(spec wire.AgentSpec, mode string) error {
	name := cmp.Or(spec.ProjectName, spec.ProjectID)
	r := spec.GitRemote
	if strings.TrimSpace(r) == "" {
		return api.BadRequest("project %s has no git remote, which %s needs; set one with `scion project set %s --git-remote <url>` or use --sharing-mode %s",
			name, mode, name, api.SharingEmptyPerAgent)
	}
	if err := api.CheckGitRemoteText(r); err != nil {
		return api.BadRequest("project %s: git remote %s is not a repository URL", name, api.Quote(redactURLs(r)))
	}
	kind, err := api.GitRemoteTransport(r)
	if err != nil {
		return api.BadRequest("project %s: %s", name, redactURLs(err.Error()))
	}
	if kind != api.GitTransportLocal {
		return nil
	}
	if !w.cfg.AllowLocalRemotes {
		return api.BadRequest("project %s: git remote %s is a path on the runtime broker's host, which this broker does not allow (its operator can, with server.broker.allow_local_git_remotes); use https://host/path, ssh://host/path or git@host:path",
			name, api.Quote(r))
	}
	if w.insideDataDir(localRemotePath(r)) {
		return api.BadRequest("project %s: git remote %s is inside the runtime broker's data directory (another project's files); use the repository's own remote", name, api.Quote(r))
	}
	return nil
}

// localRemotePath is the host path a local remote names (a path, or a
// file:// URL, which GitRemoteTransport has already accepted).
func localRemotePath(r string) string {
	if u, err := url.Parse(r); err == nil && u.Scheme != "" {
		return u.Path
	}
	return r
}

// insideDataDir reports whether p is the data directory or inside it, as
// written or once symlinks are resolved (a link elsewhere that points into
// it counts): the data directory holds every project's base clone and
// checkouts, which a project's remote must never read.
func (w *GitWorkspaces) insideDataDir(p string) bool {
	p = filepath.Clean(p)
	roots := []string{w.layout.root}
	if real, err := filepath.EvalSymlinks(w.layout.root); err == nil {
		roots = append(roots, real)
	}
	paths := []string{p}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		paths = append(paths, real)
	}
	for _, root := range roots {
		for _, q := range paths {
			if q == root || strings.HasPrefix(q, root+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}

// allowedProtocols restricts every transport git may use, whatever the
// remote (or a config file, or a submodule) says: GIT_ALLOW_PROTOCOL wins
// over protocol.*.allow, so ext::, fd::, git:// and plain http are never
// followed, and file only where local remotes are allowed.
func allowedProtocols(local bool) string {
	if local {
		return "GIT_ALLOW_PROTOCOL=https:ssh:file"
	}
	return "GIT_ALLOW_PROTOCOL=https:ssh"
}

// describe turns a failure into the error the Hub shows on the agent: bad
// input stays invalid_request, an ended context stays recognisable, and
// the rest (mostly git failing) is a runtime error naming the mode and
// git's own words, never the remote's credentials.
func (w *GitWorkspaces) describe(spec wire.AgentSpec, mode string, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return api.Errorf(api.CodeRuntimeError, "%s workspace for agent %s: %s",
		mode, spec.AgentID, redactURLs(err.Error())).WithDetail("sharingMode", mode)
}

// Remove removes the agent's own workspace in whatever project it is.
func (w *GitWorkspaces) Remove(ctx context.Context, agentID string) error {
	dirs, err := w.layout.findAgentDirs(agentID)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		projectID := filepath.Base(filepath.Dir(filepath.Dir(d)))
		errs = append(errs, w.removeIn(ctx, projectID, d))
	}
	return errors.Join(errs...)
}

// removeIn removes the workspace recorded in agentDir. Only paths inside
// the agent directory are ever deleted, whatever the record says, so the
// shared checkout and the base clone cannot be; a worktree is also
// deregistered from the base clone.
func (w *GitWorkspaces) removeIn(ctx context.Context, projectID, agentDir string) error {
	if err := w.layout.safeDir(agentDir); err != nil {
		return err
	}
	rec, _, err := readRecord(agentDir)
	if err != nil {
		// Still remove what the layout says is the agent's.
		w.log.Warn("unreadable workspace record", "dir", agentDir, "err", err)
	}
	if rec.Mode == api.SharingWorktreePerAgent {
		if err := w.removeWorktree(ctx, projectID, agentDir, rec); err != nil {
			return err
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(agentDir, ".*.tmp-*"))
	for _, p := range append(leftovers, filepath.Join(agentDir, "workspace"), filepath.Join(agentDir, recordFile)) {
		if err := w.removeInside(agentDir, p); err != nil {
			return err
		}
	}
	return nil
}

// removeInside removes path, which must lie strictly inside area as
// written, with its parent resolving to inside the data directory. The
// last element is not followed: a symlink there is removed, not its target.
func (w *GitWorkspaces) removeInside(area, path string) error {
	if !(layout{root: area}).within(path) || !w.layout.within(path) {
		return fmt.Errorf("refusing to remove %s: it is not inside %s", path, area)
	}
	if parent := filepath.Dir(path); parent != w.layout.root {
		if err := w.layout.safeDir(parent); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// hasWorkspace reports whether agentDir holds anything of a workspace: a
// record, a workspace directory, or a temporary file of a create that
// stopped half-way.
func (w *GitWorkspaces) hasWorkspace(agentDir string) bool {
	for _, p := range []string{recordFile, "workspace"} {
		if _, err := os.Lstat(filepath.Join(agentDir, p)); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(agentDir, ".*.tmp-*"))
	return len(leftovers) > 0
}
