package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
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

// useHub makes h the current hub of the hub list, signed in with token.
func useHub(t *testing.T, name string, h *fakeHub, token string) {
	t.Helper()
	l, err := config.LoadHubList()
	if err != nil {
		t.Fatal(err)
	}
	l.Hubs[name] = &config.HubEntry{URL: h.URL, Token: token}
	l.Current = name
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
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
