package system

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/docker"
)

// TestDockerMoveOverTheExport: two Docker broker processes whose workspace
// exports are one directory, bind-mounted at a mount point of each (the
// export simulated by the shared directory: this machine has no NFS
// client; everything above the mount is real). An agent of a
// shared-workspace project runs on b1 with an uncommitted file and an
// unpushed commit in its checkout; `scion reincarnate --broker b2` moves
// it: it runs on b2 as its next generation, sees both changes from
// inside its new container, finds the handoff in its new home, and b1
// holds no container and no directory of it any more.
func TestDockerMoveOverTheExport(t *testing.T) {
	cl := requireDocker(t)
	requireGit(t)
	requireDemoImage(t)
	probe := requireProbe(t)
	requireBinary(t)
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "bind mounts need root")
	}
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	remotes := t.TempDir()
	admin.mustScion(t, "project", "create", "shared", "--sharing-mode", api.SharingSharedWorkspace, "--git-remote", makeGitRemote(t, remotes))
	admin.mustScion(t, "hub", "settings", "set", "--default-image", docker.DemoImage)

	export := t.TempDir()
	if err := os.Mkdir(filepath.Join(export, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	brokers := map[string]*dockerBrokerHost{}
	for _, name := range []string{"b1", "b2"} {
		m := bindExport(t, export)
		b := &dockerBrokerHost{brokerHost: &brokerHost{host: newHost(t, name), brokerName: name}}
		cleanupBrokerContainers(t, cl, &b.brokerID)
		b.useHub(t, hub.URL, token)
		var reg registration
		b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
		b.brokerID = reg.BrokerID
		b.mustScion(t, "runtime-broker", "provide", "--project", "shared")
		allowLocalGitRemotes(t, b.host, remotes)
		writeWorkspaceStorage(t, b.host, m)
		b.startDocker(t)
		brokers[name] = b
	}
	online := map[string]string{"b1": api.BrokerOnline, "b2": api.BrokerOnline}
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(online) })

	var a api.Agent
	if err := admin.scionJSONCmd(&a, append([]string{"start", "mover", "--project", "shared", "--broker", "b1", "--"},
		(&dockerAgent{}).command()...)...); err != nil || a.Phase != api.PhaseRunning {
		t.Fatalf("the agent on b1: %+v, %v", a, err)
	}

	// The agent's work in progress: an unpushed commit and an
	// uncommitted file in the shared checkout, on the export.
	checkout := filepath.Join(export, "ws", "projects", a.ProjectID, "shared")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", checkout, "-c", "user.name=Agent", "-c", "user.email=agent@scion.invalid",
			"-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if err := os.WriteFile(filepath.Join(checkout, "committed.txt"), []byte("unpushed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "committed.txt")
	git("commit", "--quiet", "-m", "work not pushed yet")
	if err := os.WriteFile(filepath.Join(checkout, "draft.txt"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(git("rev-parse", "HEAD"))

	handoff := filepath.Join(t.TempDir(), "handoff.md")
	if err := os.WriteFile(handoff, []byte("finish the draft and push"), 0o600); err != nil {
		t.Fatal(err)
	}
	admin.mustScion(t, "reincarnate", "mover", "--project", "shared", "--broker", "b2", "--dry-run")
	out := admin.mustScion(t, "reincarnate", "mover", "--project", "shared", "--broker", "b2", "--handoff-file", handoff)
	if !strings.Contains(out, "Move completed") {
		t.Fatalf("the move did not complete:\n%s", out)
	}

	bySlug, err := admin.agentsBySlug()
	if err != nil {
		t.Fatal(err)
	}
	moved := bySlug["mover"]
	if moved.BrokerID != brokers["b2"].brokerID || moved.Phase != api.PhaseRunning || moved.Generation != 2 || moved.ID != a.ID {
		t.Fatalf("after the move: %+v", moved)
	}
	if cs := brokerContainers(t, cl, brokers["b1"].brokerID); len(cs) != 0 {
		t.Errorf("b1 keeps %d container(s) of the agent", len(cs))
	}
	if cs := brokerContainers(t, cl, brokers["b2"].brokerID); len(cs) != 1 || cs[0].State != "running" {
		t.Errorf("b2's containers: %+v, want the agent's, running", cs)
	}
	if dirs := agentDirs(t, filepath.Join(brokers["b1"].home, "broker")); len(dirs) != 0 {
		t.Errorf("b1 keeps the agent's directory: %v", dirs)
	}
	if got := strings.TrimSpace(git("rev-parse", "HEAD")); got != head || !strings.Contains(git("status", "--porcelain"), "draft.txt") {
		t.Errorf("the checkout after the move: HEAD %s (want %s), status %q", got, head, git("status", "--porcelain"))
	}

	// From inside the new container: both changes, and the handoff.
	home := filepath.Join(brokers["b2"].home, "broker", "projects", a.ProjectID, "agents", a.ID, "home")
	if err := copyFile(probe, filepath.Join(home, "fsprobe"), 0o755); err != nil {
		t.Fatal(err)
	}
	probeOut := func(args ...string) string {
		t.Helper()
		return admin.mustScion(t, append([]string{"exec", "mover", "--project", "shared", "--", "/home/agent/fsprobe"}, args...)...)
	}
	if got := probeOut("cat", "/workspace/draft.txt"); got != "uncommitted\n" {
		t.Errorf("the uncommitted file inside the new container: %q", got)
	}
	if got := probeOut("cat", "/workspace/committed.txt"); got != "unpushed\n" {
		t.Errorf("the unpushed commit's file inside the new container: %q", got)
	}
	if got := probeOut("cat", "/home/agent/"+api.HandoffFile); !strings.Contains(got, "finish the draft and push") || !strings.Contains(got, "generation 2") {
		t.Errorf("the handoff in the new home: %q", got)
	}
}
