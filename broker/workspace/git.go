package workspace

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

// GitConfig configures Git; the zero value is usable.
type GitConfig struct {
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
	// LocalRemoteRoots are the directories under which a path on the
	// broker's host (or a file:// URL) may be a project's git remote
	// (server.broker.allow_local_git_remotes); none by default: whoever may
	// set a project's remote could otherwise read any repository the
	// broker's user can, another project's base clone included. See
	// localremote.go for how a path is judged.
	LocalRemoteRoots []string
	// LocalRemoteDeny are directories that are never a remote even inside
	// a root: the Scion home. The data directory always is one.
	LocalRemoteDeny []string
	// Export, when set, is the NFS share (server.workspace_storage) that
	// holds the shared-workspace checkouts, so that every broker mounting
	// it sees the same one and an agent can move between them with its
	// workspace in place. The other modes stay on the local disk: a
	// container runtime mounts a per-agent directory from there.
	Export *Export
	Logger *slog.Logger
}

// Git makes each agent's workspace the way its project's sharing
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
type Git struct {
	layout Layout
	// shared is where shared-workspace checkouts are: the export's
	// layout when there is one, else layout.
	shared Layout
	cfg    GitConfig
	git    gitRunner
	log    *slog.Logger
	local  localPolicy
	// projects serializes the work on a project's base clone and shared
	// checkout: cloning, fetching, and adding and removing worktrees, whose
	// registrations in the common git directory are not safe to race.
	projects projectLocks

	mu      sync.Mutex
	fetched map[string]time.Time // when the last good fetch of a base clone began
}

// NewGit makes workspaces under dataDir, the broker's data
// directory.
func NewGit(dataDir string, cfg GitConfig) (*Git, error) {
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
	for _, r := range cfg.LocalRemoteRoots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("workspaces: local git remote root %q is not an absolute path", r)
		}
	}
	local := localPolicy{roots: slices.Clone(cfg.LocalRemoteRoots), deny: append([]string{root}, cfg.LocalRemoteDeny...)}
	git := newGitRunner(cfg.Git, append(slices.Clone(cfg.Env), allowedProtocols(local.allowed())))
	if git.dir, err = emptyGitDir(root); err != nil {
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	shared := Layout{Root: root}
	if cfg.Export != nil {
		if !filepath.IsAbs(cfg.Export.Root) {
			return nil, fmt.Errorf("workspaces: export root %q is not an absolute path", cfg.Export.Root)
		}
		shared = Layout{Root: filepath.Clean(cfg.Export.Root)}
	}
	return &Git{
		layout:  Layout{Root: root},
		shared:  shared,
		cfg:     cfg,
		git:     git,
		log:     cfg.Logger,
		local:   local,
		fetched: map[string]time.Time{},
	}, nil
}

// emptyGitDir is the working directory of every git the broker runs: an
// empty directory of its own, so that nothing git resolves against its
// working directory (a relative path, /proc/self/cwd) reaches the
// broker's. It is made read-only on the first git run (a refused create
// leaves nothing in the data directory); one already there must be an
// empty directory.
func emptyGitDir(root string) (string, error) {
	dir := filepath.Join(root, ".git-cwd")
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dir, nil
	}
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s, git's working directory, is not a directory; remove it", dir)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		return "", fmt.Errorf("%s, git's working directory, must be empty (err %v); empty it", dir, err)
	}
	return dir, nil
}

// Storage reports where workspaces are: on the broker's local disk, or on
// its NFS export (with the marker it reads there and whether it could).
func (w *Git) Storage() Storage {
	if w.cfg.Export != nil {
		return w.cfg.Export.Report()
	}
	return Storage{Type: StorageLocal}
}

// PlacementOf is where a workspace this broker made at dir is: on the
// export when dir lies under its root.
func (w *Git) PlacementOf(dir string) string {
	if w.cfg.Export != nil && w.shared.within(dir) {
		return PlacementExport
	}
	return PlacementLocal
}

// Placement is where a recorded workspace is (PlacementExport or
// PlacementLocal).
func (r Record) Placement() string {
	if r.Storage == StorageNFS {
		return PlacementExport
	}
	return PlacementLocal
}

// Workspace returns the record of the agent's workspace.
func (w *Git) Workspace(agentID string) (Record, error) {
	dirs, err := w.layout.FindAgentDirs(agentID)
	if err != nil {
		return Record{}, err
	}
	for _, d := range dirs {
		if rec, ok, err := readRecord(d); err != nil || ok {
			return rec, err
		}
	}
	return Record{}, api.NotFound(api.CodeAgentNotFound, "no workspace recorded for agent %s", agentID)
}

// Prepare makes the agent's workspace and records it. On failure it leaves
// nothing of the agent's behind (a base clone or shared checkout that was
// already there stays as it was).
func (w *Git) Prepare(ctx context.Context, spec wire.AgentSpec) (string, error) {
	began := time.Now()
	mode := cmp.Or(spec.SharingMode, api.SharingEmptyPerAgent)
	if !api.ValidSharingMode(mode) {
		return "", api.BadRequest("unknown sharing mode %q: use %s, %s, %s or %s", mode,
			api.SharingWorktreePerAgent, api.SharingSharedWorkspace, api.SharingClonePerAgent, api.SharingEmptyPerAgent)
	}
	if err := ValidID("project ID", spec.ProjectID); err != nil {
		return "", err
	}
	if err := ValidID("agent ID", spec.AgentID); err != nil {
		return "", err
	}
	onExport := w.cfg.Export.PerAgent() && (mode == api.SharingClonePerAgent || mode == api.SharingEmptyPerAgent)
	if confirming(spec) && mode != api.SharingSharedWorkspace && !onExport {
		// Only a shared checkout (and, on a share with a claim, a
		// per-agent workspace) is on the export on this broker: nothing
		// to confirm.
		return "", api.Conflict(api.CodeMoveRefused, "moved agent %s: a %s workspace is not on this broker's export", spec.AgentID, mode)
	}
	var src gitSource
	if mode != api.SharingEmptyPerAgent {
		var err error
		if src, err = w.checkRemote(spec, mode); err != nil {
			return "", w.describe(spec, mode, err)
		}
	}
	agentDir := w.layout.AgentDir(spec.ProjectID, spec.AgentID)
	if err := w.layout.safeDirs(agentDir, w.layout.BaseDir(spec.ProjectID)); err != nil {
		return "", err
	}
	if err := w.shared.safeDirs(w.shared.SharedDir(spec.ProjectID)); err != nil {
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

	rec := Record{AgentID: spec.AgentID, ProjectID: spec.ProjectID, Mode: mode,
		Storage: StorageLocal, CreatedAt: time.Now().UTC()}
	var err error
	switch {
	case onExport:
		err = w.prepareOnExport(ctx, spec, src, mode, &rec)
	case mode == api.SharingEmptyPerAgent:
		rec.Path = filepath.Join(agentDir, "workspace")
		if err = os.Mkdir(rec.Path, 0o755); err != nil {
			err = os.MkdirAll(rec.Path, 0o755) // there already, or an error to report
		}
	case mode == api.SharingClonePerAgent:
		err = w.prepareClone(ctx, src, agentDir, &rec)
	case mode == api.SharingSharedWorkspace:
		err = w.prepareShared(ctx, spec, src, agentDir, &rec)
	case mode == api.SharingWorktreePerAgent:
		err = w.prepareWorktree(ctx, spec, src, agentDir, began, &rec)
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
		if onExport && !confirming(spec) { // one it confirmed is its work: never undone
			if rerr := w.removeOnExport(spec.AgentID); rerr != nil {
				w.log.Warn("undo workspace", "agent", spec.AgentID, "err", rerr)
			}
		}
		if madeDir {
			if rerr := w.removeInside(w.layout.Root, agentDir); rerr != nil {
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
// It returns what git is to be given: the remote, or for a local one the
// path it resolved to, with what to check again once git is done.
func (w *Git) checkRemote(spec wire.AgentSpec, mode string) (gitSource, error) {
	name := cmp.Or(spec.ProjectName, spec.ProjectID)
	r := spec.GitRemote
	if strings.TrimSpace(r) == "" {
		return gitSource{}, api.BadRequest("project %s has no git remote, which %s needs; set one with `scion project set %s --git-remote <url>` or use --sharing-mode %s",
			name, mode, name, api.SharingEmptyPerAgent)
	}
	if err := api.CheckGitRemoteText(r); err != nil {
		return gitSource{}, api.BadRequest("project %s: git remote %s is not a repository URL", name, api.Quote(redactURLs(r)))
	}
	kind, err := api.GitRemoteTransport(r)
	if err != nil {
		return gitSource{}, api.BadRequest("project %s: %s", name, redactURLs(err.Error()))
	}
	if kind != api.GitTransportLocal {
		return gitSource{url: r}, nil
	}
	if !w.local.allowed() {
		return gitSource{}, api.BadRequest("project %s: git remote %s is a path on the runtime broker's host, which this broker does not allow (its operator can, with server.broker.allow_local_git_remotes); use https://host/path, ssh://host/path or git@host:path",
			name, api.Quote(r))
	}
	local, err := w.local.check(osFS{}, localRemotePath(r))
	if err != nil && !isRefusal(err) {
		// Not a refusal: a repository missing or unreadable now fails
		// where git failing to read it would (a runtime error, the
		// create's clone or fetch), without git being given a path that
		// was not checked.
		return gitSource{url: r, err: fmt.Errorf("%s does not appear to be a git repository the runtime broker can read (it does not exist, or a directory on the way is not readable)", api.Quote(r))}, nil
	}
	if err != nil {
		return gitSource{}, w.localRefused(name, r, err)
	}
	return gitSource{url: local.path, local: local}, nil
}

// localRefused is the error for a local remote the policy refused. It
// names the remote as the project has it, never the path it resolved to
// (which may be the data directory's).
func (w *Git) localRefused(name, r string, err error) error {
	var ref *localRefusal
	errors.As(err, &ref)
	switch {
	case errors.Is(err, errThroughProc):
		return api.BadRequest("project %s: git remote %s goes through /proc, which is never a remote; name the repository's own path", name, api.Quote(r))
	case errors.Is(err, errDeniedDir) && ref.denied == w.layout.Root:
		return api.BadRequest("project %s: git remote %s is inside the runtime broker's data directory (another project's files); use the repository's own remote", name, api.Quote(r))
	case errors.Is(err, errDeniedDir):
		return api.BadRequest("project %s: git remote %s is inside the Scion home, which is never a remote; use the repository's own remote", name, api.Quote(r))
	default:
		return api.BadRequest("project %s: git remote %s (or a directory git reads from it) is not under a directory this broker allows local git remotes from (its operator can add one to server.broker.allow_local_git_remotes)", name, api.Quote(r))
	}
}

// gitSource is what git clones or fetches from.
type gitSource struct {
	url   string       // the remote git is given
	local *localSource // for a local remote, what was checked; else nil
	err   error        // a local remote that cannot be read: the clone or fetch fails with it
}

// verify checks a local source again once git is done with it: the same
// directories, still where the policy allows. A source renamed or
// relinked while git read it fails the clone or fetch.
func (w *Git) verify(src gitSource) error {
	if src.local == nil {
		return nil
	}
	now, err := w.local.check(osFS{}, src.local.path)
	if err != nil || !src.local.same(now) {
		return api.BadRequest("the project's local git remote changed while git read it; nothing of it was kept")
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
func (w *Git) describe(spec wire.AgentSpec, mode string, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return api.Errorf(api.CodeRuntimeError, "%s workspace for agent %s: %s",
		mode, spec.AgentID, redactURLs(err.Error())).WithDetail("sharingMode", mode)
}

// Remove removes the agent's own workspace in whatever project it is
// (the agent is deleted): on the export too when its per-agent workspace
// is there. A moved agent's source never calls it (it removes its local
// directory alone).
func (w *Git) Remove(ctx context.Context, agentID string) error {
	dirs, err := w.layout.FindAgentDirs(agentID)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		projectID := filepath.Base(filepath.Dir(filepath.Dir(d)))
		errs = append(errs, w.removeIn(ctx, projectID, d))
	}
	if w.cfg.Export.PerAgent() {
		errs = append(errs, w.removeOnExport(agentID))
	}
	return errors.Join(errs...)
}

// removeIn removes the workspace recorded in agentDir. Only paths inside
// the agent directory are ever deleted, whatever the record says, so the
// shared checkout and the base clone cannot be; a worktree is also
// deregistered from the base clone.
func (w *Git) removeIn(ctx context.Context, projectID, agentDir string) error {
	if err := w.layout.SafeDir(agentDir); err != nil {
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
func (w *Git) removeInside(area, path string) error {
	if !(Layout{Root: area}).within(path) || !w.layout.within(path) {
		return fmt.Errorf("refusing to remove %s: it is not inside %s", path, area)
	}
	if parent := filepath.Dir(path); parent != w.layout.Root {
		if err := w.layout.SafeDir(parent); err != nil {
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
func (w *Git) hasWorkspace(agentDir string) bool {
	for _, p := range []string{recordFile, "workspace"} {
		if _, err := os.Lstat(filepath.Join(agentDir, p)); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(agentDir, ".*.tmp-*"))
	return len(leftovers) > 0
}

// ErrNoWorkspace: Kept found no workspace of the agent to keep.
var ErrNoWorkspace = errors.New("no workspace recorded for the agent")

// Kept is the agent's recorded workspace for a create that keeps it (a
// reincarnation, a create sent again for an agent that ran before): the
// directory the record names, only where this broker's layout puts that
// agent's workspace (its agent directory, the project's shared checkout,
// its directory on the export), a plain directory, not a symlink.
// ErrNoWorkspace when the agent has neither a record nor a workspace (the
// create makes a fresh one); any other error refuses the create: a
// workspace is there but cannot be kept, and making a fresh one would
// clear it.
func (w *Git) Kept(spec wire.AgentSpec) (string, error) {
	if err := ValidID("project ID", spec.ProjectID); err != nil {
		return "", err
	}
	if err := ValidID("agent ID", spec.AgentID); err != nil {
		return "", err
	}
	agentDir := w.layout.AgentDir(spec.ProjectID, spec.AgentID)
	rec, ok, err := readRecord(agentDir)
	if err != nil {
		return "", fmt.Errorf("agent %s's workspace record cannot be read, and its workspace is kept, not replaced", spec.AgentID)
	}
	if !ok {
		if w.hasWorkspace(agentDir) {
			return "", fmt.Errorf("agent %s has a workspace without a record; it is kept, not replaced", spec.AgentID)
		}
		// Its per-agent workspace on the export, which this broker made
		// no record of (it was made on another broker of the export).
		if onExport := filepath.Join(w.shared.ExportAgentDir(spec.AgentID), "workspace"); w.cfg.Export.PerAgent() {
			if fi, err := os.Lstat(onExport); err == nil && fi.IsDir() {
				if err := w.shared.safeDirs(onExport); err != nil {
					return "", fmt.Errorf("agent %s's workspace on the export is not where it should be", spec.AgentID)
				}
				return onExport, nil
			}
		}
		return "", ErrNoWorkspace
	}
	allowed := []string{filepath.Join(agentDir, "workspace"), w.shared.SharedDir(spec.ProjectID),
		filepath.Join(w.shared.ExportAgentDir(spec.AgentID), "workspace")}
	if rec.ProjectID != spec.ProjectID || !slices.Contains(allowed, filepath.Clean(rec.Path)) {
		return "", fmt.Errorf("agent %s's workspace record names a directory that is not its workspace", spec.AgentID)
	}
	if fi, err := os.Lstat(rec.Path); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("agent %s's recorded workspace is not a directory on this broker", spec.AgentID)
	}
	return rec.Path, nil
}
