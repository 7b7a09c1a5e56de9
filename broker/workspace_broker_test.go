package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// TestBrokerWorkspacesLifecycle drives the default Workspaces through the
// broker's create and delete commands.
func TestBrokerWorkspacesLifecycle(t *testing.T) {
	repo := gitrepo.New(t)
	hub := newTestHub(t)
	rt := fake.New()
	outside := t.TempDir()
	b := startBroker(t, hub, rt, func(c *Config) {
		c.GitWorkspaces.Env, c.GitWorkspaces.LocalRemoteRoots = gitrepo.IsolatedEnv, gitrepo.LocalRoots
	})
	waitConnected(t, b)
	if got := b.WorkspaceStorage(); got != (workspace.Storage{Type: workspace.StorageLocal}) {
		t.Errorf("storage = %+v", got)
	}
	create := func(id, mode, remote string) error {
		s := spec(id)
		s.SharingMode, s.GitRemote = mode, remote
		return hub.call(wire.MethodAgentCreate, s, nil)
	}
	for _, id := range []string{"w1", "w2"} {
		if err := create(id, api.SharingWorktreePerAgent, repo.URL); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := b.AgentWorkspace("w1")
	if err != nil || rec.Mode != api.SharingWorktreePerAgent || rec.Branch != "scion/slug-w1" {
		t.Fatalf("w1's workspace: %+v, %v", rec, err)
	}
	wantFiles(t, rec.Path, "README.md")

	hub.status(wire.MethodAgentDelete, wire.AgentRef{AgentID: "w1"})
	if exists(b.layout.AgentDir("p1", "w1")) {
		t.Error("w1's agent directory still there")
	}
	if rec2, err := b.AgentWorkspace("w2"); err != nil {
		t.Error(err)
	} else {
		wantFiles(t, rec2.Path, "README.md")
	}
	wantFiles(t, b.layout.BaseDir("p1"), ".git")

	// Bad input: a clear error, and no container or directory left.
	err = create("n1", api.SharingClonePerAgent, "")
	wantCode(t, err, api.CodeInvalidRequest)
	if !strings.Contains(err.Error(), "scion project set proj --git-remote") {
		t.Errorf("no-remote error: %v", err)
	}
	err = create("n2", api.SharingClonePerAgent, repo.URL+".missing")
	wantCode(t, err, api.CodeRuntimeError)
	for _, id := range []string{"n1", "n2"} {
		if exists(b.layout.AgentDir("p1", id)) {
			t.Errorf("%s's agent directory left behind", id)
		}
		if _, err := rt.Inspect(t.Context(), id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("%s's container left behind: %v", id, err)
		}
	}

	// A project directory that leads out of the data directory.
	if err := os.Symlink(outside, b.layout.ProjectDir("evil")); err != nil {
		t.Fatal(err)
	}
	s := spec("e1")
	s.ProjectID = "evil"
	wantCode(t, hub.call(wire.MethodAgentCreate, s, nil), api.CodeInvalidRequest)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("made outside the data directory: %v", entries)
	}
	if err := os.MkdirAll(filepath.Join(outside, "agents", "e2", "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hub.call(wire.MethodAgentDelete, wire.AgentRef{AgentID: "e2"}, nil); err == nil {
		t.Error("delete through a symlink out of the data directory succeeded")
	}
	wantFiles(t, filepath.Join(outside, "agents", "e2"), "home")
}
