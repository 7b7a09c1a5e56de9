package broker

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/wire"
)

// isolatedGitEnv keeps the machine's git config out of the tests, both
// their own git commands and the broker's.
var isolatedGitEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}

// testLocalRoots allow the tests' remotes, made under the temporary
// directory (as the data directories are, which stay refused).
var testLocalRoots = []string{os.TempDir()}

// localRoots is testLocalRoots where allow, else none.
func localRoots(allow bool) []string {
	if allow {
		return testLocalRoots
	}
	return nil
}

// testGit runs a git command of the test's own (setting up repositories,
// inspecting workspaces) and returns its trimmed output.
func testGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(isolatedGitEnv,
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// testRepo is a bare repository standing in for a project's remote, with a
// working clone (src) to push commits from.
type testRepo struct{ url, bare, src string }

func newTestRepo(t *testing.T) *testRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true, so not skipping: git is not installed (.ci/run installs it)")
		}
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	r := &testRepo{bare: filepath.Join(dir, "remote.git"), src: filepath.Join(dir, "src")}
	testGit(t, dir, "init", "-q", "--bare", "--initial-branch=main", r.bare)
	testGit(t, dir, "init", "-q", "--initial-branch=main", r.src)
	r.commit(t, "README.md", "hello\n")
	r.commit(t, "src/main.go", "package main\n")
	r.url = "file://" + filepath.ToSlash(r.bare)
	return r
}

// commit writes a file, commits it, pushes it and returns the commit.
func (r *testRepo) commit(t *testing.T, name, content string) string {
	t.Helper()
	writeFile(t, filepath.Join(r.src, name), content)
	testGit(t, r.src, "add", name)
	testGit(t, r.src, "commit", "-q", "-m", "add "+name)
	testGit(t, r.src, "push", "-q", r.bare, "main")
	return testGit(t, r.src, "rev-parse", "HEAD")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTestWorkspaces(t *testing.T, cfg GitWorkspacesConfig) *GitWorkspaces {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Env = append(cfg.Env, isolatedGitEnv...)
	// The test remotes are bare repositories on this host.
	cfg.LocalRemoteRoots = testLocalRoots
	w, err := NewGitWorkspaces(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func agentSpec(mode, remote, agentID string) wire.AgentSpec {
	return wire.AgentSpec{AgentID: agentID, Slug: "s-" + agentID, ProjectID: "p1", ProjectName: "web",
		SharingMode: mode, GitRemote: remote}
}

func mustPrepare(t *testing.T, w *GitWorkspaces, spec wire.AgentSpec) string {
	t.Helper()
	dir, err := w.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatalf("prepare %s (%s): %v", spec.AgentID, spec.SharingMode, err)
	}
	return dir
}

func mustRemove(t *testing.T, w *GitWorkspaces, agentID string) {
	t.Helper()
	if err := w.Remove(t.Context(), agentID); err != nil {
		t.Fatalf("remove %s: %v", agentID, err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func wantFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if !exists(filepath.Join(dir, n)) {
			t.Errorf("%s has no %s", dir, n)
		}
	}
}

// wantNothingLeft checks that a failed create left nothing of the agent:
// no agent directory, no base clone or shared checkout it started, no
// temporary clone. An empty agents/ directory may stay: it is the
// project's, and concurrent creates may be using it.
func wantNothingLeft(t *testing.T, w *GitWorkspaces, projectID, agentID string) {
	t.Helper()
	for _, p := range []string{w.layout.agentDir(projectID, agentID), w.layout.baseDir(projectID), w.layout.sharedDir(projectID)} {
		if exists(p) {
			t.Errorf("%s left behind", p)
		}
	}
	_ = filepath.WalkDir(w.layout.projectDir(projectID), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("%s left behind", p)
		}
		return nil
	})
}
