package system

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	scion "github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv/iapproxy"
	"github.com/scion-go/scion/internal/testenv/oidcprovider"
	"github.com/scion-go/scion/internal/wait"
)

// TestOneBrokerThreeHubs: one broker process on the process runtime
// serves three Hubs at once, each a separate process: two behind
// identity-aware proxies with different audiences, one plain. The one
// machine registers with each (a second and third register add
// connections), keeps a channel to each with its own transport auth, and
// runs an agent for each. Each Hub lists only its own agent, and holds no
// container it has no agent for. The global project is refused with 409
// global_project_disabled. Cutting the first IAP Hub's proxy takes that
// Hub's channel down and nothing else: the plain Hub's agent is stopped
// and started meanwhile, and its broker stays online throughout.
func TestOneBrokerThreeHubs(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	idp := oidcprovider.New(t, oidcprovider.Options{})
	type hubSide struct {
		name  string
		hub   *hubProc
		token string
		admin *host
		cl    *scion.Client
		url   string // what the broker dials: the proxy's, or the Hub's own
		proxy *iapproxy.Proxy
		aud   string
	}
	var hubs []*hubSide
	for _, h := range []struct{ name, aud string }{{"a", "iap-client-a"}, {"b", "iap-client-b"}, {"c", ""}} {
		hs := &hubSide{name: h.name, aud: h.aud}
		hs.hub = startTeamHub(t, newHost(t, "hub-"+h.name), hbFlags...)
		hs.token = hs.hub.adminToken(t)
		hs.admin = newHost(t, "admin-"+h.name)
		hs.admin.useHub(t, hs.hub.URL, hs.token)
		hs.admin.mustScion(t, "project", "create", "team")
		hs.cl = scion.New(hs.hub.URL, hs.token)
		hs.url = hs.hub.URL
		if h.aud != "" {
			hs.proxy = iapproxy.New(t, hs.hub.URL, h.aud, idp.VerifyServiceAccountToken)
			hs.url = hs.proxy.URL
		}
		hubs = append(hubs, hs)
	}
	a, c := hubs[0], hubs[2]

	const name = "multi"
	b := &brokerHost{host: newHost(t, name), brokerName: name}
	b.extra = []string{"GOOGLE_APPLICATION_CREDENTIALS=" + idp.ServiceAccountKeyFile(t, "multi@sa.example")}
	for _, hs := range hubs {
		b.mustScion(t, "hub", "add", hs.name, hs.url, "--token", hs.token)
		args := []string{"runtime-broker", "register", "--hub", hs.name, "--name", name}
		if hs.aud != "" {
			args = append(args, "--transport-mode", "iap", "--transport-audience", hs.aud)
		}
		var reg registration
		b.mustScionJSON(t, &reg, args...)
		b.mustScion(t, "runtime-broker", "provide", "--hub", hs.name, "--project", "team")
	}
	var st struct {
		Connections []struct{ HubEndpoint, TransportAudience string }
	}
	b.mustScionJSON(t, &st, "runtime-broker", "status", "--hub", "c")
	if len(st.Connections) != 3 {
		t.Fatalf("three registrations stored %d connections: %+v", len(st.Connections), st.Connections)
	}
	b.proc = b.start(t, "broker-"+name, append([]string{"runtime-broker", "start", "--runtime", "process"}, hbFlags...)...)
	for _, hs := range hubs {
		waitBrokerOnline(t, hs.cl, name)
	}
	t.Cleanup(func() { // the process runtime's agents are real processes
		for _, hs := range hubs {
			_, _, _ = hs.admin.scion("delete", "on-"+hs.name, "--project", "team")
		}
	})

	for _, hs := range hubs {
		var ag api.Agent
		if err := hs.admin.scionJSONCmd(&ag, "start", "on-"+hs.name, "--project", "team", "--broker", name, "--", "sleep", "1000"); err != nil {
			t.Fatalf("start on hub %s: %v", hs.name, err)
		}
		if ag.Phase != api.PhaseRunning {
			t.Fatalf("hub %s's agent: phase %s (%s)", hs.name, ag.Phase, ag.StatusMessage)
		}
	}
	for _, hs := range hubs {
		as, err := hs.admin.agentsBySlug()
		if err != nil {
			t.Fatal(err)
		}
		if len(as) != 1 || as["on-"+hs.name].Phase != api.PhaseRunning {
			t.Errorf("hub %s lists %v, want its own agent alone, running", hs.name, slices.Sorted(maps.Keys(as)))
		}
	}
	if a.proxy.Accepted("multi@sa.example") == 0 || hubs[1].proxy.Accepted("multi@sa.example") == 0 {
		t.Error("the IAP Hubs saw no request with the broker's token")
	}

	// The global project: refused on a broker that serves several Hubs.
	c.admin.mustScion(t, "project", "create", api.GlobalProject)
	_, stderr, err := c.admin.scion("start", "g1", "--project", api.GlobalProject, "--broker", name, "--", "sleep", "1000")
	if err == nil || !strings.Contains(stderr, "global_project_disabled") && !strings.Contains(stderr, "does not run agents of the global project") {
		t.Fatalf("an agent of the global project on a multi-Hub broker: %v\n%s", err, stderr)
	}

	// Cut Hub a's proxy: its channel goes, the others stay.
	cOffline := strings.Count(c.hub.proc.Logs(), `msg="broker offline"`)
	a.proxy.Cut()
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return a.admin.brokerStatuses(map[string]string{name: api.BrokerOffline})
	})
	for _, step := range []string{"stop", "start"} {
		var ag api.Agent
		if err := c.admin.scionJSONCmd(&ag, step, "on-c", "--project", "team"); err != nil {
			t.Fatalf("%s on the plain Hub while the IAP Hub is cut off: %v", step, err)
		}
	}
	if err := hubs[1].admin.brokerStatuses(map[string]string{name: api.BrokerOnline}); err != nil {
		t.Errorf("the other IAP Hub: %v", err)
	}
	a.proxy.Restore()
	waitBrokerOnline(t, a.cl, name)
	if n := strings.Count(c.hub.proc.Logs(), `msg="broker offline"`); n != cOffline {
		t.Errorf("the plain Hub saw the broker go offline %d times while another Hub was cut off", n-cOffline)
	}
	for _, hs := range hubs {
		if logs := hs.hub.proc.Logs(); strings.Contains(logs, "no agent for") {
			t.Errorf("hub %s was told of a container it has no agent for:\n%s", hs.name, logs)
		}
	}
	// Swapped audiences: each proxy refuses, and the broker's log says
	// why without a token. The agents go first (the process runtime's
	// are real processes, and the refused Hubs could not delete theirs).
	for _, hs := range hubs {
		hs.admin.mustScion(t, "delete", "on-"+hs.name, "--project", "team")
	}
	restart := func(extra ...string) {
		t.Helper()
		b.proc.Signal(t, syscall.SIGTERM)
		b.proc.WaitExit(t, 30*time.Second)
		b.extra = append([]string{b.extra[0]}, extra...)
		b.proc = b.start(t, "broker-"+name, append([]string{"runtime-broker", "start", "--runtime", "process"}, hbFlags...)...)
	}
	credsPath := filepath.Join(b.home, "broker-credentials.yaml")
	orig, err := os.ReadFile(credsPath)
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.NewReplacer("iap-client-a", "iap-client-b", "iap-client-b", "iap-client-a").Replace(string(orig))
	if err := os.WriteFile(credsPath, []byte(swapped), 0o600); err != nil {
		t.Fatal(err)
	}
	refusedA, refusedB := len(a.proxy.Refused()), len(hubs[1].proxy.Refused())
	restart()
	waitBrokerOnline(t, c.cl, name)
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		ra, rb := a.proxy.Refused()[refusedA:], hubs[1].proxy.Refused()[refusedB:]
		if len(ra) == 0 || len(rb) == 0 || !strings.Contains(ra[0], `audience "iap-client-b"`) || !strings.Contains(rb[0], `audience "iap-client-a"`) {
			return fmt.Errorf("refusals after the swap: a %q, b %q", ra, rb)
		}
		if n := strings.Count(b.proc.Logs(), "from something in front of the Hub (IAP or another proxy)"); n < 2 {
			return fmt.Errorf("the broker logged %d refusals by a proxy", n)
		}
		return nil
	})
	if logs := b.proc.Logs(); strings.Contains(logs, "eyJ") {
		t.Errorf("the broker's log holds a token:\n%s", logs)
	}
	// SCION_TRANSPORT_AUDIENCE overrides both connections' audiences (the
	// plain Hub's connection, with no mode, stays plain).
	refusedB = len(hubs[1].proxy.Refused())
	restart("SCION_TRANSPORT_AUDIENCE=iap-client-a")
	waitBrokerOnline(t, a.cl, name)
	waitBrokerOnline(t, c.cl, name)
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		if rb := hubs[1].proxy.Refused()[refusedB:]; len(rb) == 0 || !strings.Contains(rb[0], `audience "iap-client-a"`) {
			return fmt.Errorf("hub b's proxy after the override: %q", rb)
		}
		return nil
	})

	// Each Hub's broker keeps its own directory under the data directory.
	dirs, _ := filepath.Glob(filepath.Join(b.home, "broker", "hubs", "*"))
	if len(dirs) != 2 {
		t.Errorf("per-Hub data directories: %v", dirs)
	}
	if _, err := os.Stat(filepath.Join(b.home, "broker")); err != nil {
		t.Error(err)
	}
}
