package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// A member's project whose remote is a path on the broker host, the base
// clone of another project, must not hand that project's files to its
// agent: refused by default, and refused even where local remotes are
// allowed, since it is inside the broker's data directory. It used to be
// cloned.
func TestLocalRemoteIntoAnotherProjectRefused(t *testing.T) {
	repo := newTestRepo(t)
	for _, allowLocal := range []bool{false, true} {
		hub := newTestHub(t)
		rt := fake.New()
		b := startBroker(t, hub, rt, func(c *Config) {
			c.GitWorkspaces.Env, c.GitWorkspaces.LocalRemoteRoots = isolatedGitEnv, localRoots(allowLocal)
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
			victimRemote = repo.url
			if err := create("v1", "victim", api.SharingWorktreePerAgent, victimRemote); err != nil {
				t.Fatal(err)
			}
		} else {
			// Without network, make the base clone by hand where the
			// broker keeps it.
			base := b.layout.baseDir("victim")
			if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
				t.Fatal(err)
			}
			testGit(t, filepath.Dir(base), "clone", "-q", repo.bare, base)
		}
		base := b.layout.baseDir("victim")
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
		if entries, _ := os.ReadDir(b.layout.agentDir("thief", "thief")); len(entries) != 0 {
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
			if err := create("ok1", "other", api.SharingClonePerAgent, repo.url); err != nil {
				t.Fatal(err)
			}
		} else {
			err := create("ok1", "other", api.SharingClonePerAgent, repo.url)
			wantCode(t, err, api.CodeInvalidRequest)
			if !strings.Contains(err.Error(), "server.broker.allow_local_git_remotes") {
				t.Errorf("refusal does not name the setting: %v", err)
			}
		}
		// Helper transports never reach git.
		wantCode(t, create("x1", "other", api.SharingClonePerAgent, "ext::sh -c touch% /tmp/x"), api.CodeInvalidRequest)
	}
}

// git itself is told which transports it may use, so a remote that gets
// past the checks (from a config file, a redirect) still cannot run ext::
// or fd::, nor read a local repository where local remotes are off.
func TestGitTransportsRestricted(t *testing.T) {
	repo := newTestRepo(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, allowLocal := range []bool{false, true} {
		w := newTestWorkspaces(t, GitWorkspacesConfig{})
		w = mustNewWorkspaces(t, w, allowLocal)
		if _, err := w.git.run(t.Context(), "", "-c", "protocol.ext.allow=always", "ls-remote", "ext::sh -c touch% "+marker); err == nil {
			t.Errorf("allowLocal %v: git ran an ext:: remote", allowLocal)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("allowLocal %v: the ext:: command ran", allowLocal)
		}
		_, err := w.git.run(t.Context(), "", "ls-remote", "--", repo.url)
		if allowLocal && err != nil {
			t.Errorf("local remote with local allowed: %v", err)
		}
		if !allowLocal && (err == nil || !strings.Contains(err.Error(), "not allowed")) {
			t.Errorf("local remote with local not allowed: err %v, want transport 'file' not allowed", err)
		}
	}
}

// mustNewWorkspaces is w's configuration with local remotes allowed or not.
func mustNewWorkspaces(t *testing.T, w *GitWorkspaces, allowLocal bool) *GitWorkspaces {
	t.Helper()
	cfg := w.cfg
	cfg.LocalRemoteRoots = localRoots(allowLocal)
	nw, err := NewGitWorkspaces(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return nw
}
