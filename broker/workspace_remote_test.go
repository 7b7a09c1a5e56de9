package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// A member's project whose remote is a path on the broker host, the base
// clone of another project, must not hand that project's files to its
// agent: refused by default, and refused even where local remotes are
// allowed, since it is inside the broker's data directory. It used to be
// cloned.
func TestLocalRemoteIntoAnotherProjectRefused(t *testing.T) {
	repo := gitrepo.New(t)
	for _, allowLocal := range []bool{false, true} {
		hub := newTestHub(t)
		rt := fake.New()
		b := startBroker(t, hub, rt, func(c *Config) {
			c.GitWorkspaces.Env, c.GitWorkspaces.LocalRemoteRoots = gitrepo.IsolatedEnv, localRoots(allowLocal)
		})
		waitConnected(t, b)
		create := func(id, project, mode, remote string) error {
			s := spec(id)
			s.ProjectID, s.ProjectName, s.SharingMode, s.GitRemote = project, project, mode, remote
			return hub.call(wire.MethodAgentCreate, s, nil)
		}
		// The victim project's base clone, made by a broker allowed to
		// read the remote (https in real life; a local path here).
		victimRemote := "https://git.example.invalid/victim.git"
		if allowLocal {
			victimRemote = repo.URL
			if err := create("v1", "victim", api.SharingWorktreePerAgent, victimRemote); err != nil {
				t.Fatal(err)
			}
		} else {
			// Without network, make the base clone by hand where the
			// broker keeps it.
			base := b.layout.BaseDir("victim")
			if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
				t.Fatal(err)
			}
			gitrepo.Git(t, filepath.Dir(base), "clone", "-q", repo.Bare, base)
		}
		base := b.layout.BaseDir("victim")
		for _, remote := range []string{base, "file://" + base, filepath.Join(base, ".git"), filepath.Join(b.cfg.DataDir, "projects")} {
			for _, mode := range []string{api.SharingClonePerAgent, api.SharingWorktreePerAgent, api.SharingSharedWorkspace} {
				err := create("thief", "thief", mode, remote)
				wantCode(t, err, api.CodeInvalidRequest)
				want := "does not allow"
				if allowLocal {
					want = "inside the runtime broker's data directory"
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("allowLocal %v, %s %s: %v; want it to say %q", allowLocal, mode, remote, err, want)
				}
				if strings.Contains(err.Error(), b.cfg.DataDir) && !strings.Contains(remote, b.cfg.DataDir) {
					t.Errorf("the error names the data directory: %v", err)
				}
			}
		}
		if _, err := rt.Inspect(t.Context(), "thief"); err == nil {
			t.Errorf("allowLocal %v: the refused agent exists", allowLocal)
		}
		if entries, _ := os.ReadDir(b.layout.AgentDir("thief", "thief")); len(entries) != 0 {
			t.Errorf("allowLocal %v: the refused agent left files: %v", allowLocal, entries)
		}
		// A symlink from outside into the data directory is inside too.
		if allowLocal {
			link := filepath.Join(t.TempDir(), "innocent.git")
			if err := os.Symlink(base, link); err != nil {
				t.Fatal(err)
			}
			wantCode(t, create("thief", "thief", api.SharingClonePerAgent, link), api.CodeInvalidRequest)
			// A local repository outside it is fine where allowed.
			if err := create("ok1", "other", api.SharingClonePerAgent, repo.URL); err != nil {
				t.Fatal(err)
			}
		} else {
			err := create("ok1", "other", api.SharingClonePerAgent, repo.URL)
			wantCode(t, err, api.CodeInvalidRequest)
			if !strings.Contains(err.Error(), "server.broker.allow_local_git_remotes") {
				t.Errorf("refusal does not name the setting: %v", err)
			}
		}
		// Helper transports never reach git.
		wantCode(t, create("x1", "other", api.SharingClonePerAgent, "ext::sh -c touch% /tmp/x"), api.CodeInvalidRequest)
	}
}
