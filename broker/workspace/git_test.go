package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
)

func TestEmptyPerAgentWorkspace(t *testing.T) {
	w := newTestWorkspaces(t, GitConfig{})
	for _, mode := range []string{"", api.SharingEmptyPerAgent} {
		s := agentSpec(mode, "", "a1")
		dir := mustPrepare(t, w, s)
		if want := filepath.Join(w.layout.AgentDir("p1", "a1"), "workspace"); dir != want {
			t.Fatalf("dir = %s, want %s", dir, want)
		}
		if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
			t.Fatalf("workspace not an empty directory: %v, %v", entries, err)
		}
		rec, err := w.Workspace("a1")
		if err != nil || rec.Mode != api.SharingEmptyPerAgent || rec.Path != dir || rec.Storage != StorageLocal ||
			rec.ProjectID != "p1" || rec.CreatedAt.IsZero() {
			t.Fatalf("record = %+v, %v", rec, err)
		}
		mustRemove(t, w, "a1")
		if exists(dir) || exists(filepath.Join(w.layout.AgentDir("p1", "a1"), recordFile)) {
			t.Fatal("workspace or its record still there")
		}
		if _, err := w.Workspace("a1"); !api.IsCode(err, api.CodeAgentNotFound) {
			t.Fatalf("record of a removed workspace: %v", err)
		}
	}
	mustRemove(t, w, "never-made")
}

func TestClonePerAgentWorkspace(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	head := gitrepo.Git(t, repo.Src, "rev-parse", "HEAD")
	a := mustPrepare(t, w, agentSpec(api.SharingClonePerAgent, repo.URL, "a"))
	b := mustPrepare(t, w, agentSpec(api.SharingClonePerAgent, repo.URL, "b"))
	if a == b || a != filepath.Join(w.layout.AgentDir("p1", "a"), "workspace") {
		t.Fatalf("workspaces %s and %s", a, b)
	}
	for _, dir := range []string{a, b} {
		wantFiles(t, dir, "README.md", "src/main.go", ".git")
		if got := gitrepo.Git(t, dir, "rev-parse", "HEAD"); got != head {
			t.Errorf("%s at %s, want %s", dir, got, head)
		}
		if got := gitrepo.Git(t, dir, "rev-parse", "--is-shallow-repository"); got != "false" {
			t.Errorf("%s shallow = %s without a clone depth", dir, got)
		}
	}
	// Clones are independent.
	gitrepo.WriteFile(t, filepath.Join(a, "only-a.txt"), "a")
	if exists(filepath.Join(b, "only-a.txt")) {
		t.Fatal("a file of a's clone shows in b's")
	}
	mustRemove(t, w, "a")
	if exists(a) {
		t.Fatal("a's clone still there")
	}
	wantFiles(t, b, "README.md")
}

func TestClonePerAgentDepth(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{CloneDepth: 1})
	dir := mustPrepare(t, w, agentSpec(api.SharingClonePerAgent, repo.URL, "a"))
	wantFiles(t, dir, "README.md", "src/main.go")
	if got := gitrepo.Git(t, dir, "rev-parse", "--is-shallow-repository"); got != "true" {
		t.Fatalf("is-shallow-repository = %s with depth 1", got)
	}
	if got := gitrepo.Git(t, dir, "rev-list", "--count", "HEAD"); got != "1" {
		t.Fatalf("%s commits with depth 1", got)
	}
	if rec, err := w.Workspace("a"); err != nil || rec.CloneDepth != 1 {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	if _, err := NewGit(t.TempDir(), GitConfig{CloneDepth: -1}); err == nil {
		t.Fatal("negative clone depth accepted")
	}
}

func TestWorktreePerAgentWorkspace(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	head := gitrepo.Git(t, repo.Src, "rev-parse", "HEAD")
	base := w.layout.BaseDir("p1")
	a := mustPrepare(t, w, agentSpec(api.SharingWorktreePerAgent, repo.URL, "a"))
	b := mustPrepare(t, w, agentSpec(api.SharingWorktreePerAgent, repo.URL, "b"))

	for id, dir := range map[string]string{"a": a, "b": b} {
		if dir != filepath.Join(w.layout.AgentDir("p1", id), "workspace") {
			t.Fatalf("%s's workspace at %s", id, dir)
		}
		wantFiles(t, dir, "README.md", "src/main.go")
		if got := gitrepo.Git(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "scion/s-"+id {
			t.Errorf("%s on branch %s, want scion/s-%s", id, got, id)
		}
		if got := gitrepo.Git(t, dir, "rev-parse", "HEAD"); got != head {
			t.Errorf("%s at %s, want the remote's %s", id, got, head)
		}
		rec, err := w.Workspace(id)
		if err != nil || rec.Mode != api.SharingWorktreePerAgent || rec.Path != dir || rec.Branch != "scion/s-"+id ||
			rec.BaseCommit != head || rec.GitCommonDir != filepath.Join(base, ".git") {
			t.Errorf("record of %s = %+v, %v", id, rec, err)
		}
	}

	// Work in one worktree is not visible in another.
	gitrepo.WriteFile(t, filepath.Join(a, "feature.txt"), "a's work")
	gitrepo.Git(t, a, "add", "feature.txt")
	gitrepo.Git(t, a, "commit", "-q", "-m", "a's work")
	if exists(filepath.Join(b, "feature.txt")) || gitrepo.Git(t, b, "rev-parse", "HEAD") != head {
		t.Fatal("a's commit shows in b's worktree")
	}

	// A later create fetches: it starts from the remote's new commit.
	newHead := repo.Commit(t, "NEWS", "news\n")
	c := mustPrepare(t, w, agentSpec(api.SharingWorktreePerAgent, repo.URL, "c"))
	if got := gitrepo.Git(t, c, "rev-parse", "HEAD"); got != newHead {
		t.Errorf("c at %s, want the fetched %s", got, newHead)
	}
	wantFiles(t, c, "NEWS")

	// Removing b (no commits of its own) deletes its worktree and branch
	// and nothing else.
	mustRemove(t, w, "b")
	if exists(b) {
		t.Fatal("b's worktree still there")
	}
	branches := gitrepo.Git(t, base, "branch", "--list", "scion/*", "--format=%(refname:short)")
	if branches != "scion/s-a\nscion/s-c" {
		t.Errorf("branches after removing b:\n%s", branches)
	}
	wantFiles(t, a, "feature.txt", "README.md")
	wantFiles(t, base, ".git")

	// Removing a keeps its branch: its commit is nowhere else.
	mustRemove(t, w, "a")
	if exists(a) {
		t.Fatal("a's worktree still there")
	}
	if got := gitrepo.Git(t, base, "log", "-1", "--format=%s", "scion/s-a"); got != "a's work" {
		t.Errorf("a's branch lost its commit: %q", got)
	}
	// A new agent with a's slug gets a branch of its own instead.
	a2 := agentSpec(api.SharingWorktreePerAgent, repo.URL, "a2")
	a2.Slug = "s-a"
	if got := gitrepo.Git(t, mustPrepare(t, w, a2), "rev-parse", "--abbrev-ref", "HEAD"); got != "scion/s-a-a2" {
		t.Errorf("a2 on %s, want scion/s-a-a2", got)
	}

	// A branch whose commits were pushed goes with its agent.
	gitrepo.WriteFile(t, filepath.Join(c, "pushed.txt"), "c")
	gitrepo.Git(t, c, "add", "pushed.txt")
	gitrepo.Git(t, c, "commit", "-q", "-m", "c's work")
	gitrepo.Git(t, c, "push", "-q", "origin", "scion/s-c")
	mustRemove(t, w, "c")
	if got := gitrepo.Git(t, base, "branch", "--list", "scion/s-c"); got != "" {
		t.Errorf("pushed branch kept: %q", got)
	}
	if got := gitrepo.Git(t, base, "worktree", "list", "--porcelain"); countLines(got, "worktree ") != 2 {
		t.Errorf("worktrees registered:\n%s", got)
	}
}

func TestSharedWorkspace(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	shared := w.layout.SharedDir("p1")
	a := mustPrepare(t, w, agentSpec(api.SharingSharedWorkspace, repo.URL, "a"))
	b := mustPrepare(t, w, agentSpec(api.SharingSharedWorkspace, repo.URL, "b"))
	if a != shared || b != shared {
		t.Fatalf("workspaces %s and %s, want both %s", a, b, shared)
	}
	wantFiles(t, shared, "README.md", "src/main.go", ".git")
	gitrepo.WriteFile(t, filepath.Join(a, "from-a.txt"), "hi b")
	if got, err := os.ReadFile(filepath.Join(b, "from-a.txt")); err != nil || string(got) != "hi b" {
		t.Fatalf("b does not see a's file: %q, %v", got, err)
	}
	if rec, err := w.Workspace("b"); err != nil || rec.Mode != api.SharingSharedWorkspace || rec.Path != shared {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	// Removing agents never removes the checkout, and a later agent gets
	// it as the others left it.
	mustRemove(t, w, "a")
	mustRemove(t, w, "b")
	wantFiles(t, shared, "README.md", "from-a.txt", ".git")
	if exists(w.layout.AgentDir("p1", "a")+"/workspace") || exists(w.layout.AgentDir("p1", "a")+"/"+recordFile) {
		t.Fatal("a's own state still there")
	}
	repo.Commit(t, "LATER", "x\n")
	c := mustPrepare(t, w, agentSpec(api.SharingSharedWorkspace, repo.URL, "c"))
	wantFiles(t, c, "from-a.txt")
	if exists(filepath.Join(c, "LATER")) {
		t.Error("the shared checkout was updated under its agents")
	}
}

func TestWorkspaceStorageJSON(t *testing.T) {
	w := newTestWorkspaces(t, GitConfig{})
	b, _ := json.Marshal(w.Storage())
	if string(b) != `{"type":"local"}` {
		t.Errorf("storage = %s", b)
	}
	b, _ = json.Marshal(Storage{Type: StorageNFS, Server: "nfs.example", Export: "/exports/scion", SubpathRoot: "ws"})
	if string(b) != `{"type":"nfs","server":"nfs.example","export":"/exports/scion","subpath_root":"ws"}` {
		t.Errorf("nfs storage = %s", b)
	}
}

// countLines counts the lines of s that start with prefix.
func countLines(s, prefix string) int {
	return strings.Count("\n"+s, "\n"+prefix)
}
