package system

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// TestFlatBrokerStartupRefusals is issue 15's acceptance for the start of
// a process with server.broker.instances: an entry that does not validate
// refuses the start at once, naming the entry; a workstation whose
// in-process Hub refuses the first registration (the experiment off) is
// up and logs the instance as not activated; an instance whose cluster
// cannot be reached is refused and reported while the other one serves.
// (A remote instance registered while the experiment is off:
// TestRemoteFlatInstanceActivatesWhenTheExperimentIsTurnedOn.)
func TestFlatBrokerStartupRefusals(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	t.Run("entries that do not validate", func(t *testing.T) {
		closed := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
		for _, tc := range []struct {
			name      string
			instances string // server.broker.instances, as YAML under it
			want      []string
		}{
			{"duplicate key", `
      - key: same
        name: one
        runtime_target: {type: docker}
      - key: same
        name: two
        runtime_target: {type: kubernetes, context: batch, namespace: agents}`,
				[]string{`server.broker.instances[1] (key "same")`, `key "same"`}},
			{"two runtime targets (a list)", `
      - key: both
        name: both
        runtime_target:
          - {type: docker}
          - {type: kubernetes, context: batch, namespace: agents}`,
				[]string{`server.broker.instances[0] (key "both")`, "runtime_target"}},
			{"two runtime targets (mixed fields)", `
      - key: ok
        name: ok
        runtime_target: {type: kubernetes, context: batch, namespace: agents}
      - key: mixed
        name: mixed
        runtime_target: {type: docker, context: batch, namespace: agents}`,
				[]string{`server.broker.instances[1] (key "mixed")`, "runtime_target"}},
			{"unknown type", `
      - key: pod
        name: pod
        runtime_target: {type: podman}`,
				[]string{`server.broker.instances[0] (key "pod")`, `runtime_target.type "podman"`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := newHost(t, "refused")
				settings := "server:\n  broker:\n    hub_endpoint: " + closed + "\n    instances:" + tc.instances + "\n"
				if err := os.WriteFile(filepath.Join(h.home, "settings.yaml"), []byte(settings), 0o600); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, stderr, rc, err := h.scionCode(nil, "runtime-broker", "start")
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("runtime-broker start took %v to refuse", d)
				}
				if rc == 0 {
					t.Fatalf("runtime-broker start exited 0; stderr %q", stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("runtime-broker start: stderr %q lacks %q", stderr, w)
					}
				}
			})
		}
	})

	t.Run("experiment off at first registration", func(t *testing.T) {
		requireDocker(t)
		requireDemoImage(t)
		h := newHost(t, "ws")
		writeInstances(t, h, "", dockerInstance("ws-docker"))
		port := FreePort(t)
		hp := &hubProc{host: h, URL: fmt.Sprintf("http://127.0.0.1:%d", port),
			args: append([]string{"server", "start", "--workstation", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, hbFlags...)}
		hp.restart(t)
		wait.Eventually(t, 20*time.Second, pollInterval, func() error {
			if hp.proc.Exited() {
				t.Fatalf("the workstation exited (%v)", hp.proc.ExitErr())
			}
			if l := hp.proc.Logs(); !strings.Contains(l, "instance ws-docker not activated") || !strings.Contains(l, api.CodeExperimentDisabled) {
				return fmt.Errorf("no 'instance ws-docker not activated: %s' in the log yet", api.CodeExperimentDisabled)
			}
			return nil
		})
		// Still up and ready, with nothing registered: the refusal wrote
		// no broker record.
		waitReady(t, hp.URL, hp.proc, 5*time.Second)
		m, err := h.brokers()
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := m["ws-docker"]; ok {
			t.Errorf("the Hub lists the refused instance: %+v", b)
		}
	})

	t.Run("one unreachable instance", func(t *testing.T) {
		cl := requireDocker(t)
		requireDemoImage(t)
		hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
		token := hub.adminToken(t)
		admin := newHost(t, "admin")
		admin.useHub(t, hub.URL, token)
		admin.mustScion(t, "project", "create", "default")

		bh := newHost(t, "flat")
		bh.useHub(t, hub.URL, token)
		enableFlatBrokers(t, admin, hub.URL, token)
		// The cluster's API server is a loopback port nobody listens on.
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: https://127.0.0.1:%d\n"+
			"users:\n- name: gone\n  user:\n    token: t\ncontexts:\n- name: gone\n  context:\n    cluster: gone\n    user: gone\ncurrent-context: gone\n", FreePort(t))
		if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
			t.Fatal(err)
		}
		writeInstances(t, bh, kubeconfig, dockerInstance("up-docker"), kubeInstance("gone-k8s", "gone", "agents"))
		var dockerID string
		cleanupBrokerContainers(t, cl, &dockerID)
		dockerID = registerInstance(t, bh, "up-docker", "default")
		registerInstance(t, bh, "gone-k8s", "default")

		proc := bh.start(t, "broker-flat", append([]string{"runtime-broker", "start"}, hbFlags...)...)
		instancesOnline(t, admin, map[string]api.RuntimeTarget{"up-docker": {Type: api.RuntimeTargetDocker}})
		wait.Eventually(t, 15*time.Second, pollInterval, func() error {
			if l := proc.Logs(); !strings.Contains(l, "instance gone-k8s refused") {
				return fmt.Errorf("no 'instance gone-k8s refused' in the broker's log yet")
			}
			return nil
		})
		if proc.Exited() {
			t.Fatalf("the broker exited (%v) though up-docker can serve", proc.ExitErr())
		}
		m, err := admin.brokers()
		if err != nil {
			t.Fatal(err)
		}
		if b := m["gone-k8s"]; b.Status == api.BrokerOnline {
			t.Errorf("gone-k8s is online though its cluster cannot be reached: %+v", b)
		}
		if b := m["up-docker"]; b.ID != dockerID {
			t.Errorf("up-docker is listed as %+v, registered as %s", b, dockerID)
		}
	})
}
