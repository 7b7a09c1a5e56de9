package system

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/wait"
)

// TestMoveChecksTheExportThroughEachMount: three broker processes whose
// settings name the same NFS share (server, export, subpath_root). b1's
// and b2's mounts are one directory, bind-mounted at a mount point of
// each (this machine has no NFS client: the export is simulated by the
// shared directory, everything above the mount is real); b3 mounts
// another directory. A move's dry run of an agent on b1 passes
// same_export to b2 (it then stops where it must: the agent's workspace
// is on b1's disk) and is refused on same_export to b3: matching
// settings over different directories, told apart by the export identity
// each broker read through its own mount.
func TestMoveChecksTheExportThroughEachMount(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "bind mounts need root")
	}
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")

	shared, other := t.TempDir(), t.TempDir()
	for _, d := range []string{shared, other} {
		if err := os.Mkdir(filepath.Join(d, "ws"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mounts := map[string]string{"b3": other}
	for _, name := range []string{"b1", "b2"} {
		m := bindExport(t, shared)
		mounts[name] = m
	}
	for _, name := range []string{"b1", "b2", "b3"} {
		b := &brokerHost{host: newHost(t, name), brokerName: name}
		b.useHub(t, hub.URL, token)
		var reg registration
		b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
		writeWorkspaceStorage(t, b.host, mounts[name])
		b.mustScion(t, "runtime-broker", "provide", "--project", "default")
		b.startBroker(t)
	}
	all := map[string]string{"b1": api.BrokerOnline, "b2": api.BrokerOnline, "b3": api.BrokerOnline}
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(all) })
	admin.mustScion(t, "create", "mover", "--broker", "b1", "--", "x")

	// The CLI prints every check of a refused move and the refusal.
	dryRun := func(target string) (checks map[string]string, refusal string) {
		t.Helper()
		stdout, stderr, err := admin.scion("reincarnate", "mover", "--broker", target, "--dry-run")
		if err == nil {
			t.Fatalf("dry run to %s was eligible: %s", target, stdout)
		}
		checks = map[string]string{}
		for _, l := range strings.Split(stdout, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && slices.Contains(api.MoveCheckOrder, f[0]) {
				checks[f[0]] = f[1]
			}
		}
		return checks, stderr
	}
	st, refusal := dryRun("b2")
	if st[api.CheckSameExport] != api.CheckPassed || st[api.CheckWorkspaceOnExport] != api.CheckFailed ||
		!strings.Contains(refusal, api.CodeMoveRefused) {
		t.Errorf("to b2 (same directory): checks %v, %q; want same_export passed, refused on workspace_on_export", st, refusal)
	}
	st, refusal = dryRun("b3")
	if st[api.CheckSameExport] != api.CheckFailed || !strings.Contains(refusal, "mount different directories") {
		t.Errorf("to b3 (other directory): checks %v, %q; want same_export failed naming different directories", st, refusal)
	}
}

// writeWorkspaceStorage sets server.workspace_storage in the host's
// settings.yaml: the share every broker of the test names alike, mounted
// (found) at mount.
func writeWorkspaceStorage(t *testing.T, h *host, mount string) {
	t.Helper()
	editSettings(t, h, func(s *config.Settings) { s.Server.WorkspaceStorage = testShare("ws", mount) })
}

// testShare is the nfs storage setting of the tests' export, with its
// subpath_root sub, mounted (found) at mount.
func testShare(sub, mount string) config.WorkspaceStorageSettings {
	return config.WorkspaceStorageSettings{Backend: config.StorageNFS, NFS: config.NFSSettings{
		Shares: []config.NFSShare{{Server: "nfs.test", Export: "/srv/scion", SubpathRoot: sub, MountPath: mount}}}}
}

// editSettings changes the host's settings.yaml with edit, keeping
// whatever register wrote there.
func editSettings(t *testing.T, h *host, edit func(*config.Settings)) {
	t.Helper()
	path := filepath.Join(h.home, "settings.yaml")
	var s config.Settings
	if b, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
	}
	edit(&s)
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// bindExport bind-mounts the directory export at a mount point of its
// own (one broker's view of the simulated NFS export: this machine has
// no NFS client), unmounted when the test ends.
func bindExport(t *testing.T, export string) string {
	t.Helper()
	m := t.TempDir()
	if err := syscall.Mount(export, m, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(m, syscall.MNT_DETACH) })
	return m
}
