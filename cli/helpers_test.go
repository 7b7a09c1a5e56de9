package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv"
)

// setHome gives the test an empty Scion home and an environment without
// any of the variables that select a Hub or project.
func setHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("SCION_HOME", home)
	for _, k := range []string{api.EnvHubEndpoint, api.EnvHubURL, api.EnvAgentToken, api.EnvProject} {
		t.Setenv(k, "")
	}
	return home
}

// result is one CLI run.
type result struct {
	out, err string
	code     int
}

// runCLI runs the scion command tree in process, as Execute would.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	root := NewRoot(Daemons{})
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	code := run(context.Background(), root)
	return result{out.String(), errb.String(), code}
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := runCLI(t, "", args...)
	if r.code != 0 {
		t.Fatalf("scion %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r
}

// newHub starts a real Hub (internal/testenv: a hub.Server over SQLite,
// with opts.Brokers in-process brokers on the fake runtime) for a CLI
// test.
func newHub(t *testing.T, opts testenv.Options) *testenv.Env {
	t.Helper()
	return testenv.New(t, opts)
}

// useHub makes the Hub at url the current hub of the hub list, signed in
// with token.
func useHub(t *testing.T, name, url, token string) {
	t.Helper()
	l, err := config.LoadHubList()
	if err != nil {
		t.Fatal(err)
	}
	l.Hubs[name] = &config.HubEntry{URL: url, Token: token}
	l.Current = name
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
}

// hubRequests is how many requests the Hub has answered (its
// scion_http_requests_total, reading /metrics aside), for tests that check
// a command line never reached it.
func hubRequests(t *testing.T, e *testenv.Env) int {
	t.Helper()
	return routeRequests(t, e, "")
}

// routeRequests is how many requests the Hub has answered on route (its
// pattern: "GET /api/v1/jobs/{job}"); "" is every route but /metrics.
func routeRequests(t *testing.T, e *testenv.Env, route string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "scion_http_requests_total{") || strings.Contains(l, `route="GET /metrics"`) ||
			(route != "" && !strings.Contains(l, `route="`+route+`"`)) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", l, err)
		}
		n += int(v)
	}
	return n
}

// brokerID is the ID of the broker the Hub knows by name.
func brokerID(t *testing.T, e *testenv.Env, name string) string {
	t.Helper()
	b, err := e.Admin.GetBroker(context.Background(), name)
	if err != nil {
		t.Fatalf("broker %s: %v", name, err)
	}
	return b.ID
}

// registerBroker registers a broker the way another machine would, and
// returns its ID; nothing runs it, so the Hub shows it offline.
func registerBroker(t *testing.T, e *testenv.Env, name string) string {
	t.Helper()
	c, err := e.Admin.RegisterBroker(context.Background(), api.RegisterBrokerRequest{Name: name})
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	return c.BrokerID
}

func writeWorkstation(t *testing.T, url, token, brokerID string) {
	t.Helper()
	if err := (&config.Workstation{URL: url, AdminToken: token, BrokerID: brokerID, PID: os.Getpid()}).Save(); err != nil {
		t.Fatal(err)
	}
}

func loadCreds(t *testing.T) *config.BrokerCredentials {
	t.Helper()
	c, err := config.LoadBrokerCredentials()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func loadSettings(t *testing.T) *config.Settings {
	t.Helper()
	s, err := config.LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func saveCreds(t *testing.T, conns ...*config.BrokerConnection) {
	t.Helper()
	if err := (&config.BrokerCredentials{Connections: conns}).Save(); err != nil {
		t.Fatal(err)
	}
}
