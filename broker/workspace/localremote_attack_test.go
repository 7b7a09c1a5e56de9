package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
)

// A project's local remote that reaches another project's base clone by a
// path whose lexical form lies outside the data directory: through a
// symlink followed by "..", or through the broker's own working directory
// as /proc shows it (no file of the attacker's needed). Both, and the same
// as file:// URLs, used to clone the victim's files, the branch an agent
// had not pushed included.
func TestLocalRemoteAttacksRefused(t *testing.T) {
	repo := gitrepo.New(t)
	// The broker's working directory is /, as a service's often is; a
	// chdir is process-wide, so this test is not parallel.
	t.Chdir("/")
	w := newTestWorkspaces(t, GitConfig{})
	victim := agentSpec(api.SharingWorktreePerAgent, repo.URL, "v1")
	victim.ProjectID = "victim"
	ws := mustPrepare(t, w, victim)
	gitrepo.WriteFile(t, filepath.Join(ws, "secret.txt"), "unpushed\n")
	gitrepo.Git(t, ws, "add", "secret.txt")
	gitrepo.Git(t, ws, "commit", "-q", "-m", "not pushed")

	// /tmp/.../L links into the data directory's projects/.
	link := filepath.Join(t.TempDir(), "L")
	if err := os.Symlink(filepath.Join(w.layout.Root, "projects"), link); err != nil {
		t.Fatal(err)
	}
	viaLink := link + "/../projects/victim/base"
	viaCwd := "/proc/self/cwd/.." + w.layout.Root + "/projects/victim/base"
	for i, remote := range []string{viaLink, "file://" + viaLink, viaCwd, "file://" + viaCwd} {
		// The text is refused first (api.GitRemoteTransport: no "..",
		// no /proc); the path as resolved is refused on its own too, for
		// remotes a Hub of another version let through.
		if src, err := w.local.check(osFS{}, localRemotePath(remote)); !isRefusal(err) {
			t.Errorf("local policy on %s: %+v, %v; want a refusal", remote, src, err)
		}
		for _, mode := range []string{api.SharingClonePerAgent, api.SharingWorktreePerAgent, api.SharingSharedWorkspace} {
			s := agentSpec(mode, remote, "t"+string(rune('a'+i)))
			s.ProjectID = "thief-" + mode
			dir, err := w.Prepare(t.Context(), s)
			if err == nil {
				_ = w.Remove(t.Context(), s.AgentID)
				t.Errorf("%s %s: prepared %s, want it refused", mode, remote, dir)
				continue
			}
			wantCode(t, err, api.CodeInvalidRequest)
			if !strings.Contains(remote, w.layout.Root) && strings.Contains(err.Error(), w.layout.Root) {
				t.Errorf("%s %s: the error names the data directory: %v", mode, remote, err)
			}
		}
	}
	// Nothing of the victim's reached a thief's project.
	thieves, _ := filepath.Glob(filepath.Join(w.layout.Root, "projects", "thief-*"))
	for _, p := range thieves {
		_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err == nil && (d.Name() == "README.md" || d.Name() == "secret.txt") {
				t.Errorf("the victim's %s is in %s", d.Name(), path)
			}
			return nil
		})
	}
}
