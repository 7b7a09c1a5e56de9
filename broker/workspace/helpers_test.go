package workspace

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/wire"
)

// localRoots is gitrepo.LocalRoots where allow, else none.
func localRoots(allow bool) []string {
	if allow {
		return gitrepo.LocalRoots
	}
	return nil
}

func newTestWorkspaces(t *testing.T, cfg GitConfig) *Git {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Env = append(cfg.Env, gitrepo.IsolatedEnv...)
	// The test remotes are bare repositories on this host.
	cfg.LocalRemoteRoots = gitrepo.LocalRoots
	w, err := NewGit(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func agentSpec(mode, remote, agentID string) wire.AgentSpec {
	return wire.AgentSpec{AgentID: agentID, Slug: "s-" + agentID, ProjectID: "p1", ProjectName: "web",
		SharingMode: mode, GitRemote: remote}
}

func mustPrepare(t *testing.T, w *Git, spec wire.AgentSpec) string {
	t.Helper()
	dir, err := w.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatalf("prepare %s (%s): %v", spec.AgentID, spec.SharingMode, err)
	}
	return dir
}

func mustRemove(t *testing.T, w *Git, agentID string) {
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
func wantNothingLeft(t *testing.T, w *Git, projectID, agentID string) {
	t.Helper()
	for _, p := range []string{w.layout.AgentDir(projectID, agentID), w.layout.BaseDir(projectID), w.layout.SharedDir(projectID)} {
		if exists(p) {
			t.Errorf("%s left behind", p)
		}
	}
	_ = filepath.WalkDir(w.layout.ProjectDir(projectID), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("%s left behind", p)
		}
		return nil
	})
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !api.IsCode(err, code) {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}
