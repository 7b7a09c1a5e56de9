package system

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// TestLocalGitRemotesAllowList: a workstation (Hub and broker in one
// process, started from /, as a service often is) lets a project's remote
// be a repository under the user's home, and nothing else: a member who
// knows another project's ID (any member can read it) cannot clone that
// project's base clone, unpushed agent branches included, through a
// symlink followed by "..", through /proc/self/cwd/.. (no file of the
// attacker's needed: git ran in the broker's working directory), as
// file:// URLs, through a symlink inside the home, nor from a repository
// outside the home. The first four used to clone the victim's files.
func TestLocalGitRemotesAllowList(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	requireGit(t)
	h := newHost(t, "wsgit")
	port := FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	// `cd /` first: the working directory is what /proc/self/cwd shows.
	p := StartProc(t, h.logs, "hub", h.env(), "/bin/sh", "-c", `cd / && exec "$0" "$@"`, scionBin,
		"server", "start", "--workstation", "--runtime", "fake", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	waitReady(t, url, p, 15*time.Second)
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		if _, err := os.Stat(filepath.Join(h.home, "workstation.json")); err != nil {
			return err
		}
		return h.brokerStatuses(map[string]string{"local": api.BrokerOnline})
	})
	dataDir := filepath.Join(h.home, "broker")

	project := func(name, mode, remote string) (api.Project, error) {
		var pr api.Project
		err := h.scionJSON(&pr, "project", "create", name, "--sharing-mode", mode, "--git-remote", remote)
		if err == nil {
			h.mustScion(t, "runtime-broker", "provide", "--project", name)
		}
		return pr, err
	}
	start := func(name, projectName string) (api.Agent, error) {
		var a api.Agent
		err := h.scionJSONCmd(&a, "start", name, "--project", projectName, "--", "sleep", "1000")
		return a, err
	}

	// The victim: a repository under the home (allowed), an agent on its
	// own branch with a commit nobody pushed.
	victim, err := project("victim", api.SharingWorktreePerAgent, makeGitRemote(t, h.user))
	if err != nil {
		t.Fatal(err)
	}
	va, err := start("v1", "victim")
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dataDir, "projects", victim.ID, "agents", va.ID, "workspace")
	if err := os.WriteFile(filepath.Join(ws, "secret.txt"), []byte("unpushed\n"), 0o644); err != nil {
		t.Fatalf("the victim's worktree: %v", err)
	}
	hostGit(t, ws, "add", "secret.txt")
	hostGit(t, ws, "commit", "-q", "-m", "not pushed")
	base := filepath.Join(dataDir, "projects", victim.ID, "base")
	if _, err := os.Stat(filepath.Join(base, ".git")); err != nil {
		t.Fatalf("the victim's base clone: %v", err)
	}

	// /tmp/.../L links into the data directory's projects/; a link in the
	// home leads to the base clone.
	link := filepath.Join(t.TempDir(), "L")
	if err := os.Symlink(filepath.Join(dataDir, "projects"), link); err != nil {
		t.Fatal(err)
	}
	homeLink := filepath.Join(h.user, "innocent.git")
	if err := os.Symlink(base, homeLink); err != nil {
		t.Fatal(err)
	}
	viaLink := link + "/../projects/" + victim.ID + "/base"
	viaCwd := "/proc/self/cwd/.." + base
	refusals := []string{
		"must not have . or .. elements", "under /proc is never a repository", // the Hub, when set
		"inside the runtime broker's data directory", "not under a directory this broker allows", // the broker
	}
	for i, remote := range []string{
		viaLink, "file://" + viaLink, viaCwd, "file://" + viaCwd,
		filepath.Join(link, victim.ID, "base"), homeLink,
		makeGitRemote(t, ""), // outside the home
	} {
		name := fmt.Sprintf("thief%d", i)
		_, err := project(name, api.SharingClonePerAgent, remote)
		if err == nil {
			var a api.Agent
			a, err = start("t"+name, name)
			if err == nil {
				t.Errorf("remote %s: agent started (workspace of %s), want it refused", remote, a.ID)
				continue
			}
		}
		if !containsAny(err.Error(), refusals) {
			t.Errorf("remote %s: %v; want a refusal saying one of %q", remote, err, refusals)
		}
		if strings.Contains(err.Error(), "runtime_error") {
			t.Errorf("remote %s: %v; want it refused as a bad remote", remote, err)
		}
	}
	// Nothing of a refused remote (the victim's files) is in any other
	// project's directories.
	entries, _ := os.ReadDir(filepath.Join(dataDir, "projects"))
	for _, e := range entries {
		if e.Name() == victim.ID {
			continue
		}
		_ = filepath.WalkDir(filepath.Join(dataDir, "projects", e.Name()), func(path string, d os.DirEntry, err error) error {
			if err == nil && (d.Name() == "README.md" || d.Name() == "secret.txt") {
				t.Errorf("a refused remote's %s is in %s", d.Name(), path)
			}
			return nil
		})
	}

	// A repository under the home still works, as a file:// URL and as
	// a path.
	for i, remote := range []string{makeGitRemote(t, h.user), strings.TrimPrefix(makeGitRemote(t, h.user), "file://")} {
		name := fmt.Sprintf("ok%d", i)
		if _, err := project(name, api.SharingClonePerAgent, remote); err != nil {
			t.Fatal(err)
		}
		a, err := start("a"+name, name)
		if err != nil {
			t.Fatalf("remote %s under the home: %v", remote, err)
		}
		pr := filepath.Join(dataDir, "projects")
		matches, _ := filepath.Glob(filepath.Join(pr, "*", "agents", a.ID, "workspace", "src", "hello.txt"))
		if len(matches) != 1 {
			t.Errorf("remote %s: agent %s's workspace has no src/hello.txt", remote, a.ID)
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// hostGit runs git on the test's host (the victim's own commit).
func hostGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Victim", "-c", "user.email=v@scion.invalid", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
