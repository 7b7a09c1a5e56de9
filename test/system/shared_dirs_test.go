package system

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/docker"
)

// TestSharedDirsAcrossDockerBrokers: two Docker brokers, each with
// server.shared_dir_storage on nfs and the one export bind-mounted at a
// mount point of its own (the export simulated by a shared directory: the
// machine has no NFS client). An agent of the project on each sees the
// other's note in /scion/shared. A third broker without the setting keeps
// the project's shared directory to itself.
func TestSharedDirsAcrossDockerBrokers(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	requireBinary(t)
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "bind mounts need root")
	}
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "team")
	admin.mustScion(t, "hub", "settings", "set", "--default-image", docker.DemoImage)

	export := t.TempDir()
	if err := os.Mkdir(filepath.Join(export, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s1", "s2", "s3"} {
		b := &dockerBrokerHost{brokerHost: &brokerHost{host: newHost(t, name), brokerName: name}}
		cleanupBrokerContainers(t, cl, &b.brokerID)
		b.useHub(t, hub.URL, token)
		var reg registration
		b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
		b.brokerID = reg.BrokerID
		b.mustScion(t, "runtime-broker", "provide", "--project", "team")
		if name != "s3" {
			m := bindExport(t, export)
			editSettings(t, b.host, func(s *config.Settings) { s.Server.SharedDirStorage = testShare("shared", m) })
		}
		b.startDocker(t)
	}
	online := map[string]string{"s1": api.BrokerOnline, "s2": api.BrokerOnline, "s3": api.BrokerOnline}
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(online) })
	t.Cleanup(func() {
		for _, n := range []string{"on-s1", "on-s2", "on-s3"} {
			_, _, _ = admin.scion("delete", n, "--project", "team")
		}
	})

	ids := map[string]string{}
	start := func(name, broker string) {
		t.Helper()
		var a api.Agent
		if err := admin.scionJSONCmd(&a, "start", name, "--project", "team", "--broker", broker, "--",
			"scion", "agent-demo", "--steps", "0", "--share", "--stay"); err != nil || a.Phase != api.PhaseRunning {
			t.Fatalf("start %s on %s: %+v, %v", name, broker, a, err)
		}
		ids[name] = a.ID
	}
	notes := func(name string, want ...string) {
		t.Helper()
		wait.Eventually(t, 30*time.Second, pollInterval, func() error {
			out, _, err := admin.scion("logs", name, "--project", "team")
			if err != nil {
				return err
			}
			// A restarted agent's log holds its earlier runs: the last
			// one's notes count.
			if i := strings.LastIndex(out, "hello from a Scion agent"); i >= 0 {
				out = out[i:]
			}
			var got []string
			for _, l := range strings.Split(out, "\n") {
				if n, ok := strings.CutPrefix(strings.TrimSpace(l), "shared note: "); ok {
					got = append(got, strings.TrimSuffix(n, ".note"))
				}
			}
			for _, w := range want {
				if !strings.Contains(strings.Join(got, " "), ids[w]) {
					return fmt.Errorf("%s lists notes %v: no note of %s (%s)\n%s", name, got, w, ids[w], out)
				}
			}
			if len(got) != len(want) {
				return fmt.Errorf("%s lists notes %v, want those of %v", name, got, want)
			}
			return nil
		})
	}
	start("on-s1", "s1")
	notes("on-s1", "on-s1")
	start("on-s2", "s2")
	notes("on-s2", "on-s1", "on-s2") // s2's agent sees s1's note
	admin.mustScion(t, "stop", "on-s1", "--project", "team")
	admin.mustScion(t, "start", "on-s1", "--project", "team")
	notes("on-s1", "on-s1", "on-s2") // and s1's sees s2's
	if _, err := os.Stat(filepath.Join(export, "shared", "shared-dirs")); err != nil {
		t.Errorf("the shared directories are not on the export: %v", err)
	}
	// A broker without the setting: the project's directory of its own.
	start("on-s3", "s3")
	notes("on-s3", "on-s3")
}
