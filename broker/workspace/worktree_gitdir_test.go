package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWorktreeGitDir(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, file, want string }{
		{"absolute", "gitdir: /data/projects/p/base/.git/worktrees/workspace3\n", "/data/projects/p/base/.git/worktrees/workspace3"},
		{"relative", "gitdir: ../../base/.git/worktrees/w", filepath.Join(dir, "relative", "../../base/.git/worktrees/w")},
		{"not a link", "[core]\n", ""},
		{"empty link", "gitdir:   \n", ""},
	} {
		work := filepath.Join(dir, tc.name)
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, ".git"), []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := WorktreeGitDir(work); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := WorktreeGitDir(filepath.Join(dir, "none")); got != "" {
		t.Errorf("no .git: %q", got)
	}
	// A directory (a clone, not a worktree) is no link.
	if err := os.MkdirAll(filepath.Join(dir, "clone", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := WorktreeGitDir(filepath.Join(dir, "clone")); got != "" {
		t.Errorf("clone: %q", got)
	}
}
