package cli

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/config"
)

// daemonUsage is a daemon's usage error, as package launch makes them.
type daemonUsage struct{ msg string }

func (e daemonUsage) Error() string { return e.msg }
func (daemonUsage) Usage() bool     { return true }

// runWith runs the command tree with daemons d.
func runWith(d Daemons, args ...string) (stderr string, code int) {
	root := NewRoot(d)
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	code = run(context.Background(), root)
	return errb.String(), code
}

// TestServerStartPassesItsFlags: scion server start parses its flags into
// config.ServerOptions (defaults included) and hands them to the injected
// Server; a usage error from it exits 2 like a bad flag, and a root with
// no daemons refuses instead of starting anything.
func TestServerStartPassesItsFlags(t *testing.T) {
	var got config.ServerOptions
	d := Daemons{Server: func(_ context.Context, o config.ServerOptions) error { got = o; return nil }}
	if e, code := runWith(d, "server", "start", "--workstation", "--listen", "127.0.0.1:9", "--db", "/x.db", "--runtime", "fake",
		"--oidc-issuer", "https://id.example", "--oidc-admin-email", "a@x", "--oidc-admin-email", "b@x",
		"--max-connections", "5", "--secrets-key-file", "/k", "--agent-token-ttl", "2h"); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	want := config.DefaultServeLimits()
	want.MaxConns = 5
	if !got.Workstation || got.Listen != "127.0.0.1:9" || got.DB != "/x.db" || got.Runtime != "fake" ||
		got.OIDC.Issuer != "https://id.example" || !slices.Equal(got.OIDC.AdminEmails, []string{"a@x", "b@x"}) ||
		got.Limits != want || got.SecretsKeyFile != "/k" || got.AgentTokenTTL != 2*time.Hour ||
		got.HeartbeatInterval != 2*time.Second || got.HeartbeatGrace != 6*time.Second || got.LogLevel != "info" || got.Version != Version {
		t.Fatalf("options %+v", got)
	}

	d.Server = func(context.Context, config.ServerOptions) error { return errors.Join(daemonUsage{"--listen is bad"}) }
	if e, code := runWith(d, "server", "start", "--enable-hub"); code != exitUsage || !strings.Contains(e, "--listen is bad") {
		t.Fatalf("a daemon's usage error: exit %d: %s", code, e)
	}
	if e, code := runWith(Daemons{}, "server", "start", "--enable-hub"); code != exitError || !strings.Contains(e, "without its daemons") {
		t.Fatalf("no daemons: exit %d: %s", code, e)
	}
	// The OIDC flags exist, and no flag takes the client secret itself.
	start := newServerStartCmd(Daemons{})
	for _, name := range []string{"oidc-issuer", "oidc-client-id", "oidc-client-secret-file", "oidc-default-role", "oidc-admin-email"} {
		if start.Flags().Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
	if start.Flags().Lookup("oidc-client-secret") != nil {
		t.Error("a flag takes the client secret on the command line")
	}
}

// TestBrokerStartPassesItsFlags: scion runtime-broker start checks
// --port-range itself and hands the parsed flags to the injected Broker.
func TestBrokerStartPassesItsFlags(t *testing.T) {
	var got config.BrokerOptions
	d := Daemons{Broker: func(_ context.Context, o config.BrokerOptions) error { got = o; return nil }}
	if e, code := runWith(d, "runtime-broker", "start", "--runtime", "process", "--port-range", "32000-32009", "--heartbeat-interval", "2s"); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if got != (config.BrokerOptions{Runtime: "process", LogLevel: "info", LogFormat: "text", HeartbeatInterval: 2 * time.Second, PortRange: [2]int{32000, 32009}, Version: Version}) {
		t.Fatalf("options %+v", got)
	}
	if e, code := runWith(d, "runtime-broker", "start", "--port-range", "9-1"); code != exitUsage || !strings.Contains(e, "--port-range") {
		t.Fatalf("a bad --port-range: exit %d: %s", code, e)
	}
}
