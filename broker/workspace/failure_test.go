package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
)

var gitModes = []string{api.SharingWorktreePerAgent, api.SharingSharedWorkspace, api.SharingClonePerAgent}

func TestConcurrentWorktreeCreates(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	const n = 10
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			dirs[i], errs[i] = w.Prepare(t.Context(), agentSpec(api.SharingWorktreePerAgent, repo.URL, fmt.Sprint("a", i)))
		})
	}
	wg.Wait()
	base := w.layout.BaseDir("p1")
	branches := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		wantFiles(t, dirs[i], "README.md")
		branches[gitrepo.Git(t, dirs[i], "rev-parse", "--abbrev-ref", "HEAD")] = true
	}
	if len(branches) != n {
		t.Fatalf("%d distinct branches for %d agents: %v", len(branches), n, branches)
	}
	if got := countLines(gitrepo.Git(t, base, "worktree", "list", "--porcelain"), "worktree "); got != n+1 {
		t.Fatalf("%d worktrees registered, want %d", got, n+1)
	}
	for i := range n {
		wg.Go(func() { errs[i] = w.Remove(t.Context(), fmt.Sprint("a", i)) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || exists(dirs[i]) {
			t.Fatalf("remove %d: %v (dir there: %v)", i, errs[i], exists(dirs[i]))
		}
	}
	if got := countLines(gitrepo.Git(t, base, "worktree", "list", "--porcelain"), "worktree "); got != 1 {
		t.Fatalf("%d worktrees registered after removing all, want the base only", got)
	}
	if gitrepo.Git(t, base, "branch", "--list", "scion/*") != "" {
		t.Error("branches without commits kept")
	}
}

// TestConcurrentCreatesAcrossModes runs creates of every mode, in two
// projects, at once.
func TestConcurrentCreatesAcrossModes(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{CloneDepth: 1})
	modes := append([]string{api.SharingEmptyPerAgent}, gitModes...)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			s := agentSpec(modes[i%4], repo.URL, fmt.Sprint("m", i))
			s.ProjectID = fmt.Sprint("p-", modes[i%4], "-", i%2)
			dir, err := w.Prepare(t.Context(), s)
			if err == nil && s.SharingMode != api.SharingEmptyPerAgent && !exists(filepath.Join(dir, "README.md")) {
				err = fmt.Errorf("%s: no README.md in %s", s.AgentID, dir)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestGitModeWithoutRemote(t *testing.T) {
	w := newTestWorkspaces(t, GitConfig{})
	for _, mode := range gitModes {
		_, err := w.Prepare(t.Context(), agentSpec(mode, "  ", "a"))
		if !api.IsCode(err, api.CodeInvalidRequest) || !strings.Contains(err.Error(), "project web has no git remote") ||
			!strings.Contains(err.Error(), "scion project set web --git-remote") || !strings.Contains(err.Error(), "empty-per-agent") {
			t.Errorf("%s: %v", mode, err)
		}
	}
	for _, remote := range []string{"--upload-pack=touch /tmp/x", "https://x/\nfoo"} {
		if _, err := w.Prepare(t.Context(), agentSpec(api.SharingClonePerAgent, remote, "a")); !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("remote %q: %v", remote, err)
		}
	}
	if _, err := w.Prepare(t.Context(), agentSpec("copy-on-write", "", "a")); !api.IsCode(err, api.CodeInvalidRequest) {
		t.Errorf("unknown mode: %v", err)
	}
	if entries, _ := os.ReadDir(w.layout.Root); len(entries) != 0 {
		t.Errorf("refused creates made %v", entries)
	}
}

func TestBadRemoteLeavesNothing(t *testing.T) {
	bad := "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "missing.git"))
	w := newTestWorkspaces(t, GitConfig{})
	for _, mode := range gitModes {
		s := agentSpec(mode, bad, "a")
		s.ProjectID = "p-" + mode
		_, err := w.Prepare(t.Context(), s)
		if !api.IsCode(err, api.CodeRuntimeError) || !strings.Contains(err.Error(), "missing.git") ||
			!strings.Contains(err.Error(), "does not appear to be a git repository") {
			t.Errorf("%s: %v", mode, err)
		}
		wantNothingLeft(t, w, s.ProjectID, "a")
	}

	// A remote that goes bad after the base clone exists: the new agent
	// fails, the existing one and the base clone stay.
	repo := gitrepo.New(t)
	a := mustPrepare(t, w, agentSpec(api.SharingWorktreePerAgent, repo.URL, "a"))
	_, err := w.Prepare(t.Context(), agentSpec(api.SharingWorktreePerAgent, bad, "b"))
	if !api.IsCode(err, api.CodeRuntimeError) || !strings.Contains(err.Error(), "fetching") {
		t.Errorf("fetch from a bad remote: %v", err)
	}
	if exists(w.layout.AgentDir("p1", "b")) {
		t.Error("b's directory left behind")
	}
	wantFiles(t, a, "README.md")
	wantFiles(t, w.layout.BaseDir("p1"), ".git")
	// The base clone follows the project's remote back.
	mustPrepare(t, w, agentSpec(api.SharingWorktreePerAgent, repo.URL, "c"))
}

func TestCancelledCreateLeavesNothing(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, mode := range gitModes {
		_, err := w.Prepare(ctx, agentSpec(mode, repo.URL, "a"))
		// Cancelled in git, or while waiting for the project lock.
		if !errors.Is(err, context.Canceled) && !api.IsCode(err, api.CodeBrokerUnavailable) {
			t.Errorf("%s: %v", mode, err)
		}
		wantNothingLeft(t, w, "p1", "a")
	}
}

func TestCredentialsRedacted(t *testing.T) {
	var logs bytes.Buffer
	w := newTestWorkspaces(t, GitConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	// Port 1 on loopback refuses at once.
	remote := "https://user:secret@127.0.0.1:1/x.git"
	for _, mode := range gitModes {
		_, err := w.Prepare(t.Context(), agentSpec(mode, remote, "a"))
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Fatalf("%s: %v", mode, err)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "user:") {
			t.Errorf("%s: error shows the credentials: %v", mode, err)
		}
	}
	if strings.Contains(logs.String(), "secret") {
		t.Errorf("logs show the credentials:\n%s", logs.String())
	}
}

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@host/x.git":          "https://***@host/x.git",
		"fatal: 'https://tok@h:8443/r' failed":    "fatal: 'https://***@h:8443/r' failed",
		"ssh://git@host/r and HTTP://u:p@w@h/r":   "ssh://***@host/r and HTTP://***@h/r",
		"git@github.com:org/r.git":                "git@github.com:org/r.git", // scp-like: no secret
		"https://host/path@v1 file:///srv/r.git":  "https://host/path@v1 file:///srv/r.git",
		"cloning https://a:b@h/x: fatal: no such": "cloning https://***@h/x: fatal: no such",
	} {
		if got := redactURLs(in); got != want {
			t.Errorf("redactURLs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWorkspacePathEscapeRefused(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(w.layout.Root, "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, w.layout.ProjectDir("evil")); err != nil {
		t.Fatal(err)
	}
	for _, mode := range append([]string{api.SharingEmptyPerAgent}, gitModes...) {
		s := agentSpec(mode, repo.URL, "a")
		s.ProjectID = "evil"
		_, err := w.Prepare(t.Context(), s)
		if !api.IsCode(err, api.CodeInvalidRequest) || !strings.Contains(err.Error(), "outside the runtime broker's data directory") {
			t.Errorf("%s: %v", mode, err)
		}
	}
	for _, ids := range [][2]string{{"../x", "p1"}, {"a", ".."}, {"a/b", "p1"}, {"a", "/etc"}} {
		s := agentSpec(api.SharingClonePerAgent, repo.URL, ids[0])
		s.ProjectID = ids[1]
		if _, err := w.Prepare(t.Context(), s); !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("ids %v: %v", ids, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("made outside the data directory: %v", entries)
	}
	// Removal through the symlink is refused too.
	if err := os.MkdirAll(filepath.Join(outside, "agents", "victim", "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Remove(t.Context(), "victim"); !api.IsCode(err, api.CodeInvalidRequest) {
		t.Errorf("remove through a symlink: %v", err)
	}
	wantFiles(t, filepath.Join(outside, "agents", "victim"), "workspace")
}

func TestRefSafe(t *testing.T) {
	for in, want := range map[string]string{
		"fix-login":             "fix-login",
		"--upload-pack=evil":    "upload-pack-evil",
		"../../x":               "x",
		"a..b@{1}~^:?*[ \\":     "a-b-1",
		"Émile's branch.lock":   "mile-s-branch-lock",
		strings.Repeat("x", 99): strings.Repeat("x", 64),
		"":                      "",
	} {
		if got := refSafe(in); got != want {
			t.Errorf("refSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBaseConfigSanitized plays an agent that wrote the shared git
// directory of its worktree (config and hooks) to make the broker run a
// command: the next create must not run it.
func TestBaseConfigSanitized(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	mustPrepare(t, w, agentSpec(api.SharingWorktreePerAgent, repo.URL, "a"))
	gitDir := filepath.Join(w.layout.BaseDir("p1"), ".git")
	marker := filepath.Join(t.TempDir(), "pwned")
	evil := filepath.Join(t.TempDir(), "evil.gitconfig")
	gitrepo.WriteFile(t, evil, "[core]\n\tsshCommand = touch "+marker+"\n")
	cfg, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	gitrepo.WriteFile(t, filepath.Join(gitDir, "config"), string(cfg)+
		"[core]\n\tfsmonitor = touch "+marker+"\n\thooksPath = "+filepath.Join(gitDir, "hooks")+"\n"+
		"[include]\n\tpath = "+evil+"\n[user]\n\temail = agent@example.com\n"+
		"[remote \"origin\"]\n\tuploadpack = touch "+marker+"\n")
	gitrepo.WriteFile(t, filepath.Join(gitDir, "hooks", "post-checkout"), "#!/bin/sh\ntouch "+marker+"\n")
	if err := os.Chmod(filepath.Join(gitDir, "hooks", "post-checkout"), 0o755); err != nil {
		t.Fatal(err)
	}

	b := mustPrepare(t, w, agentSpec(api.SharingWorktreePerAgent, repo.URL, "b"))
	wantFiles(t, b, "README.md")
	mustRemove(t, w, "b")
	if exists(marker) {
		t.Fatal("the broker ran a command from the base clone")
	}
	got, _ := os.ReadFile(filepath.Join(gitDir, "config"))
	for _, bad := range []string{"fsmonitor", "hookspath", "include", "uploadpack", "sshcommand"} {
		if strings.Contains(strings.ToLower(string(got)), bad) {
			t.Errorf("config still has %s:\n%s", bad, got)
		}
	}
	// origin is the remote as the broker resolved it (for a local one its
	// physical path, which the broker checked, not a text git would
	// resolve again by itself).
	origin, err := filepath.EvalSymlinks(repo.Bare)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "agent@example.com") || !strings.Contains(string(got), `url = "`+origin+`"`) {
		t.Errorf("config lost inert entries (origin %s):\n%s", origin, got)
	}
}
