// Package gitrepo makes the git repositories that workspace tests clone
// from: a bare repository standing in for a project's remote, with a
// working clone to push commits from, and git commands run with the
// machine's own git configuration kept out.
//
// It is a test harness: it imports nothing of ours, and no product package
// imports it.
package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// IsolatedEnv keeps the machine's git config out of the tests, both their
// own git commands and the broker's.
var IsolatedEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}

// LocalRoots allow the tests' remotes as local git remotes: New makes
// them under the temporary directory (as the tests' data directories are,
// which stay refused).
var LocalRoots = []string{os.TempDir()}

// Git runs a git command of the test's own (setting up repositories,
// inspecting workspaces) in dir and returns its trimmed output.
func Git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(IsolatedEnv,
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo is a bare repository (Bare, reachable as URL) standing in for a
// project's remote, with a working clone (Src) to push commits from.
type Repo struct{ URL, Bare, Src string }

// New makes a Repo with two commits on main. Without git it skips the
// test, and fails it under CI=true (.ci/run installs git).
func New(t *testing.T) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true, so not skipping: git is not installed (.ci/run installs it)")
		}
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	r := &Repo{Bare: filepath.Join(dir, "remote.git"), Src: filepath.Join(dir, "src")}
	Git(t, dir, "init", "-q", "--bare", "--initial-branch=main", r.Bare)
	Git(t, dir, "init", "-q", "--initial-branch=main", r.Src)
	r.Commit(t, "README.md", "hello\n")
	r.Commit(t, "src/main.go", "package main\n")
	r.URL = "file://" + filepath.ToSlash(r.Bare)
	return r
}

// Commit writes a file, commits it, pushes it and returns the commit.
func (r *Repo) Commit(t *testing.T, name, content string) string {
	t.Helper()
	WriteFile(t, filepath.Join(r.Src, name), content)
	Git(t, r.Src, "add", name)
	Git(t, r.Src, "commit", "-q", "-m", "add "+name)
	Git(t, r.Src, "push", "-q", r.Bare, "main")
	return Git(t, r.Src, "rev-parse", "HEAD")
}

// WriteFile writes content to path, making its directory.
func WriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
