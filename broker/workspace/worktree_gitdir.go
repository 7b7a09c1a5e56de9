package workspace

import (
	"os"
	"path/filepath"
	"strings"
)

// worktreeGitDir is the git directory a worktree workspace's .git file
// names ("gitdir: <path>", relative to the workspace when not absolute),
// or "" when work has no such file. A runtime that shows the base
// clone's git directory at another path than the broker's (Kubernetes)
// needs it to point the agent's .git there. The file is bounded: a .git
// file is one line.
func WorktreeGitDir(work string) string {
	f, err := os.Open(filepath.Join(work, ".git"))
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(work, dir)
	}
	return filepath.Clean(dir)
}
