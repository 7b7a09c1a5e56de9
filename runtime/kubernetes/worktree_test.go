package kubernetes

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/scion-go/scion/runtime"
)

// TestWorktreeGitAtFixedPath: a worktree agent's pod sees the base
// clone's git directory at /scion/git, never at the broker's data-dir
// path, and git in its workspace still works. The test makes a real
// worktree as the broker does (a base clone, `git worktree add`) on an
// "NFS share" directory, builds the pod, lays out what its container
// would see (each share mount's sub-path copied to its mount path under
// a stand-in root, the downward API's .git file over the workspace's),
// removes the broker's files, and runs git there.
func TestWorktreeGitAtFixedPath(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: git is not installed: %v", err)
		}
		t.Skip("no git")
	}
	share := t.TempDir() // the broker's data dir, on the share
	base := filepath.Join(share, "projects", "p1", "base")
	work := filepath.Join(share, "projects", "p1", "agents", "a1", "workspace")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	git(base, "init", "-q")
	if err := os.WriteFile(filepath.Join(base, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(base, "add", "README")
	git(base, "commit", "-q", "-m", "first")
	git(share, "--git-dir="+filepath.Join(base, ".git"), "worktree", "add", "--quiet", "-b", "scion/a1", "--", work, "HEAD")
	dotGit, err := os.ReadFile(filepath.Join(work, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	gitDir := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(dotGit)), "gitdir:"))

	spec := testSpec()
	spec.WorkDir, spec.HomeDir = work, filepath.Join(share, "projects", "p1", "agents", "a1", "home")
	spec.Mounts = []runtime.Mount{{Source: filepath.Join(base, ".git"), Target: filepath.Join(base, ".git")}}
	spec.GitDir = gitDir
	spec.Labels[LabelSharingMode] = modeWorktree
	pod, _, err := buildPod(podInput{spec: spec, settings: Settings{NFSPVName: "share", NFSMountPath: share}, name: "scion-a1"})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	var sawGit bool
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(m.MountPath, share) {
			t.Errorf("mount %s is at the broker's data-dir path", m.MountPath)
		}
		sawGit = sawGit || m.MountPath == gitCommonPath
	}
	if !sawGit {
		t.Fatalf("no mount at %s: %+v", gitCommonPath, c.VolumeMounts)
	}
	if want := "gitdir: /scion/git/worktrees/" + filepath.Base(gitDir); pod.Annotations[annoDotGit] != want {
		t.Fatalf("pod's .git = %q, want %q", pod.Annotations[annoDotGit], want)
	}

	// What the container sees, under root.
	root := t.TempDir()
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v := vols[m.Name]
		at := filepath.Join(root, m.MountPath)
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == nfsClaimName("share"):
			if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-a", filepath.Join(share, m.SubPath), at).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
		case v.DownwardAPI != nil:
			f := v.DownwardAPI.Items[0]
			if f.Path != m.SubPath || !strings.Contains(f.FieldRef.FieldPath, annoDotGit) {
				t.Fatalf("downward API volume %+v mounted as %+v", f, m)
			}
			// The pod's absolute path, under the stand-in root.
			link := strings.Replace(pod.Annotations[annoDotGit], "gitdir: /", "gitdir: "+root+"/", 1)
			if err := os.WriteFile(at, []byte(link), 0o444); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.RemoveAll(share); err != nil { // nothing of the broker's path is left
		t.Fatal(err)
	}
	ws := filepath.Join(root, workspacePath)
	if got := git(ws, "rev-parse", "--abbrev-ref", "HEAD"); got != "scion/a1" {
		t.Errorf("branch in the pod = %q, want scion/a1", got)
	}
	if got := git(ws, "log", "-1", "--format=%s"); got != "first" {
		t.Errorf("last commit in the pod = %q", got)
	}
	if got := git(ws, "status", "--porcelain"); got != "" {
		t.Errorf("status in the pod = %q, want clean", got)
	}
	if got, want := git(ws, "rev-parse", "--path-format=absolute", "--git-common-dir"), filepath.Join(root, gitCommonPath); got != want {
		t.Errorf("git common dir in the pod = %s, want %s", got, want)
	}
	// The agent commits on its branch, into the base clone's objects.
	if err := os.WriteFile(filepath.Join(ws, "work.txt"), []byte("done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(ws, "add", "work.txt")
	git(ws, "commit", "-q", "-m", "agent work")
	if got := git(filepath.Join(root, gitCommonPath), "--git-dir=.", "log", "-1", "--format=%s", "scion/a1"); got != "agent work" {
		t.Errorf("base clone's scion/a1 = %q, want the agent's commit", got)
	}
}
