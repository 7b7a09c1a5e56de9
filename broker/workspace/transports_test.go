package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/internal/testenv/gitrepo"
)

// git itself is told which transports it may use, so a remote that gets
// past the checks (from a config file, a redirect) still cannot run ext::
// or fd::, nor read a local repository where local remotes are off.
func TestGitTransportsRestricted(t *testing.T) {
	repo := gitrepo.New(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, allowLocal := range []bool{false, true} {
		w := newTestWorkspaces(t, GitConfig{})
		w = mustNewWorkspaces(t, w, allowLocal)
		if _, err := w.git.run(t.Context(), "", "-c", "protocol.ext.allow=always", "ls-remote", "ext::sh -c touch% "+marker); err == nil {
			t.Errorf("allowLocal %v: git ran an ext:: remote", allowLocal)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("allowLocal %v: the ext:: command ran", allowLocal)
		}
		_, err := w.git.run(t.Context(), "", "ls-remote", "--", repo.URL)
		if allowLocal && err != nil {
			t.Errorf("local remote with local allowed: %v", err)
		}
		if !allowLocal && (err == nil || !strings.Contains(err.Error(), "not allowed")) {
			t.Errorf("local remote with local not allowed: err %v, want transport 'file' not allowed", err)
		}
	}
}

// mustNewWorkspaces is w's configuration with local remotes allowed or not.
func mustNewWorkspaces(t *testing.T, w *Git, allowLocal bool) *Git {
	t.Helper()
	cfg := w.cfg
	cfg.LocalRemoteRoots = localRoots(allowLocal)
	nw, err := NewGit(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return nw
}
