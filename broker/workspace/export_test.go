package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
)

// testExport is an NFS share mounted (here: found) at root.
func testExport(root string) *Export {
	return &Export{Root: root, Storage: Storage{Type: StorageNFS, Server: "nfs.lan", Export: "/srv/scion", SubpathRoot: "ws"}}
}

// TestExportIdentity: the first broker to reach an unmarked export writes
// its marker, exclusively, so that brokers racing on one export agree;
// another directory has another identity; no marker is made where the
// export is not mounted; a marker that is not one is refused, never
// replaced.
func TestExportIdentity(t *testing.T) {
	root := t.TempDir()
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = testExport(root).Identify() })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] || len(ids[0]) != markerLen {
			t.Fatalf("broker %d read %q (%v); broker 0 %q", i, ids[i], errs[i], ids[0])
		}
	}
	if again, err := testExport(root).Identify(); err != nil || again != ids[0] {
		t.Fatalf("identity changed to %q (%v)", again, err)
	}
	if other, err := testExport(t.TempDir()).Identify(); err != nil || other == ids[0] {
		t.Fatalf("another directory's identity %q (%v), want another one than %q", other, err, ids[0])
	}

	missing := filepath.Join(t.TempDir(), "not-mounted")
	if _, err := testExport(missing).Identify(); err == nil || !strings.Contains(err.Error(), "mounted") {
		t.Fatalf("an export root that is not there: %v, want an error saying so", err)
	}
	if exists(missing) {
		t.Fatal("Identify made the missing export root")
	}
	if r := testExport(missing).Report(); r.Healthy || r.ExportID != "" || r.Type != StorageNFS || r.Server != "nfs.lan" {
		t.Fatalf("report of an unmounted export %+v, want nfs, unhealthy, no marker", r)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, MarkerFile), []byte("not an id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := testExport(bad).Identify(); err == nil {
		t.Fatal("a marker that holds no identity was accepted")
	}
	if b, _ := os.ReadFile(filepath.Join(bad, MarkerFile)); string(b) != "not an id\n" {
		t.Fatalf("the bad marker was replaced: %q", b)
	}
	// What someone with write access to the export could put there is
	// refused, never followed: a symlink (to another export's marker), a
	// FIFO (which would hang every hello), a directory.
	for name, plant := range map[string]func(string) error{
		"symlink":   func(p string) error { return os.Symlink(filepath.Join(root, MarkerFile), p) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"directory": func(p string) error { return os.Mkdir(p, 0o755) },
	} {
		dir := t.TempDir()
		if err := plant(filepath.Join(dir, MarkerFile)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := testExport(dir).Identify(); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("a %s as the marker was taken for one", name)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("reading a %s as the marker hangs", name)
		}
	}
	if r := testExport(root).Report(); !r.Healthy || r.ExportID != ids[0] {
		t.Fatalf("report %+v, want healthy with the marker", r)
	}
}

// TestSharedWorkspaceOnExport: two brokers (their own data directories)
// whose export mounts are the same directory, each at its own mount
// point, hand a shared-workspace project's agents the same checkout on
// the export, recorded as placed there; the other modes stay local.
func TestSharedWorkspaceOnExport(t *testing.T) {
	_, mounts := twoMounts(t)
	repo := gitrepo.New(t)
	a := newTestWorkspaces(t, GitConfig{Export: testExport(filepath.Join(mounts[0], "ws"))})
	b := newTestWorkspaces(t, GitConfig{Export: testExport(filepath.Join(mounts[1], "ws"))})
	if sa, sb := a.Storage(), b.Storage(); !sa.Healthy || sa.ExportID == "" || sa.ExportID != sb.ExportID {
		t.Fatalf("storage %+v and %+v: want one healthy export identity", sa, sb)
	}
	dirA := mustPrepare(t, a, agentSpec(api.SharingSharedWorkspace, repo.URL, "a1"))
	if err := os.WriteFile(filepath.Join(dirA, "uncommitted.txt"), []byte("work in progress"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirB := mustPrepare(t, b, agentSpec(api.SharingSharedWorkspace, repo.URL, "b1"))
	if got, err := os.ReadFile(filepath.Join(dirB, "uncommitted.txt")); err != nil || string(got) != "work in progress" {
		t.Fatalf("broker b's checkout %s lacks broker a's uncommitted file: %q, %v", dirB, got, err)
	}
	if !strings.HasPrefix(dirA, mounts[0]) || !strings.HasPrefix(dirB, mounts[1]) {
		t.Fatalf("checkouts %s and %s: want each under its broker's mount", dirA, dirB)
	}
	for _, c := range []struct {
		w       *Git
		agent   string
		mode    string
		placing string
	}{{a, "a1", api.SharingSharedWorkspace, PlacementExport}, {b, "b1", api.SharingSharedWorkspace, PlacementExport}} {
		rec, err := c.w.Workspace(c.agent)
		if err != nil || rec.Placement() != c.placing {
			t.Errorf("agent %s: record %+v (%v), want placement %s", c.agent, rec, err, c.placing)
		}
	}
	clone := mustPrepare(t, a, agentSpec(api.SharingClonePerAgent, repo.URL, "a2"))
	if strings.HasPrefix(clone, mounts[0]) {
		t.Errorf("a clone-per-agent workspace %s is on the export", clone)
	}
	if rec, err := a.Workspace("a2"); err != nil || rec.Placement() != PlacementLocal {
		t.Errorf("clone-per-agent record %+v (%v), want local", rec, err)
	}
	// Removing an agent never touches the shared checkout on the export.
	mustRemove(t, a, "a1")
	if !exists(filepath.Join(dirB, "uncommitted.txt")) {
		t.Fatal("removing agent a1 removed the shared checkout's work")
	}
}

// TestSharedWorkspaceNeedsTheExport: a broker whose export is not mounted
// (its root gone, or there but unmarked: the bare mount point) or whose
// root was replaced by a symlink makes no shared checkout, so nothing is
// made on its local disk in the export's place and recorded as on it.
func TestSharedWorkspaceNeedsTheExport(t *testing.T) {
	repo := gitrepo.New(t)
	base := t.TempDir()
	elsewhere := t.TempDir()
	for name, root := range map[string]func() string{
		"root gone":     func() string { return filepath.Join(base, "gone") },
		"root unmarked": func() string { d := filepath.Join(base, "bare"); os.Mkdir(d, 0o755); return d },
		"root a symlink": func() string {
			d := filepath.Join(base, "link")
			os.Symlink(elsewhere, d)
			testExport(elsewhere).Identify() // a marked directory behind it
			return d
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := root()
			w := newTestWorkspaces(t, GitConfig{Export: testExport(dir)})
			if _, err := w.Prepare(t.Context(), agentSpec(api.SharingSharedWorkspace, repo.URL, "a1")); err == nil {
				t.Fatal("a shared checkout was made without a usable export")
			}
			if exists(filepath.Join(dir, "projects")) || exists(filepath.Join(elsewhere, "projects")) {
				t.Fatal("something was made where the export should be")
			}
		})
	}
}

// skipUnlessCI skips a test whose real part (here: root's bind mounts) is
// missing, and fails it under CI=true, where .ci/run provides it.
func skipUnlessCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// TestPerAgentWorkspacesOnAClaimedExport: on a share Kubernetes pods
// mount through a claim (pv_name), clone-per-agent and empty-per-agent
// workspaces are made on the export, by agent ID; another broker of the
// export, provisioning the agent moved to it, finds the very workspace
// through its own mount (and refuses when it is not there) and never
// makes or removes it; the agent's delete removes it.
func TestPerAgentWorkspacesOnAClaimedExport(t *testing.T) {
	export, mounts := twoMounts(t)
	repo := gitrepo.New(t)
	claimed := func(m string) *Export {
		e := testExport(filepath.Join(m, "ws"))
		e.Storage.PVName = "scion-workspaces"
		return e
	}
	a := newTestWorkspaces(t, GitConfig{Export: claimed(mounts[0])})
	b := newTestWorkspaces(t, GitConfig{Export: claimed(mounts[1])})
	if sa := a.Storage(); !sa.Healthy {
		t.Fatalf("storage %+v", sa)
	}
	for _, mode := range []string{api.SharingClonePerAgent, api.SharingEmptyPerAgent} {
		id := "agent-" + strings.Split(mode, "-")[0]
		dirA := mustPrepare(t, a, agentSpec(mode, repo.URL, id))
		if want := filepath.Join(mounts[0], "ws", "agents", id, "workspace"); dirA != want {
			t.Fatalf("%s workspace at %s, want %s", mode, dirA, want)
		}
		if rec, err := a.Workspace(id); err != nil || rec.Placement() != PlacementExport {
			t.Fatalf("%s record %+v (%v), want placed on the export", mode, rec, err)
		}
		if err := os.WriteFile(filepath.Join(dirA, "draft.txt"), []byte("uncommitted"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A create that keeps the workspace finds it on the export
		// though this broker made no record of it (a move cut short
		// after its assignment), and never clears it.
		keep := agentSpec(mode, repo.URL, id)
		keep.KeepWorkspace = true
		if dir, err := b.Kept(keep); err != nil || dir != filepath.Join(mounts[1], "ws", "agents", id, "workspace") {
			t.Fatalf("broker b keeps %s's workspace as %q, %v", mode, dir, err)
		}
		moved := agentSpec(mode, repo.URL, id)
		moved.Moved = true
		dirB := mustPrepare(t, b, moved)
		if got, err := os.ReadFile(filepath.Join(dirB, "draft.txt")); err != nil || string(got) != "uncommitted" ||
			dirB != filepath.Join(mounts[1], "ws", "agents", id, "workspace") {
			t.Fatalf("broker b's %s workspace %s: %q, %v", mode, dirB, got, err)
		}
		gone := agentSpec(mode, repo.URL, "never-made-"+id)
		gone.Moved = true
		if _, err := b.Prepare(t.Context(), gone); !api.IsCode(err, api.CodeMoveRefused) || strings.Contains(err.Error(), mounts[1]) {
			t.Errorf("a moved agent whose workspace is not there: %v, want agent_move_refused naming no host path", err)
		}
		if exists(filepath.Join(export, "ws", "agents", "never-made-"+id)) {
			t.Error("the refused provision made the workspace")
		}
		// The delete (on the broker the agent is on) removes it.
		mustRemove(t, b, id)
		if exists(filepath.Join(export, "ws", "agents", id)) {
			t.Errorf("%s: the delete left the workspace on the export", mode)
		}
	}
}

// twoMounts is an export directory (with its subpath_root "ws") bind-
// mounted at two mount points, as two hosts mounting one NFS export.
func twoMounts(t *testing.T) (export string, mounts [2]string) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipUnlessCI(t, "bind mounts need root")
	}
	export = t.TempDir()
	mounts = [2]string{t.TempDir(), t.TempDir()}
	for _, m := range mounts {
		if err := syscall.Mount(export, m, "", syscall.MS_BIND, ""); err != nil {
			skipUnlessCI(t, fmt.Sprintf("bind mount: %v", err))
		}
		t.Cleanup(func() { syscall.Unmount(m, syscall.MNT_DETACH) })
	}
	if err := os.Mkdir(filepath.Join(export, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	return export, mounts
}
