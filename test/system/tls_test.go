package system

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv/certs"
	"github.com/scion-go/scion/internal/wait"
)

// TestHubOverTLS: a team Hub serving HTTPS with a self-signed certificate,
// as separate processes with the CLI and a broker:
//   - the CLI trusts it through hubs.<name>.ca (scion hub add --ca), a
//     broker registers through the same CA (saved as its connection's
//     caFile), and an agent started through the CLI runs on it and calls
//     the Hub from inside with the CA its broker hands it;
//   - a CLI and a broker without the CA fail with a message naming the
//     fix (--ca), and the broker stays offline until it has it;
//   - a renewed certificate is served without a restart (same process),
//     and the connected broker is not disturbed;
//   - plain http to a Hub that is not on loopback is refused by register
//     before anything is sent.
func TestHubOverTLS(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	h := newHost(t, "hub")
	dir := t.TempDir()
	cert, key, ca := filepath.Join(dir, "hub.crt"), filepath.Join(dir, "hub.key"), filepath.Join(dir, "ca.pem")
	first, renewed := certs.SelfSigned(t, "hub-one"), certs.SelfSigned(t, "hub-two")
	first.Write(t, cert, key)
	// Clients trust both: the renewal below is a new self-signed
	// certificate, and what is checked is that the Hub serves it.
	certs.WriteBundle(t, ca, first, renewed)

	port := FreePort(t)
	hub := &hubProc{host: h, URL: fmt.Sprintf("https://127.0.0.1:%d", port),
		args: append([]string{"server", "start", "--enable-hub", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--db", filepath.Join(h.home, "hub.db"), "--tls-cert", cert, "--tls-key", key}, hbFlags...),
		hc: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.Pool(first, renewed)}}}}
	hub.restart(t)
	if !strings.Contains(hub.proc.Logs(), "Scion Hub ready at "+hub.URL) {
		t.Fatalf("the Hub does not say it serves %s:\n%s", hub.URL, hub.proc.Logs())
	}
	token := hub.adminToken(t)

	// A CLI without the CA: refused, with the fix named.
	stranger := newHost(t, "stranger")
	stranger.mustScion(t, "hub", "add", "team", hub.URL, "--use", "--token", token)
	_, stderr, err := stranger.scion("project", "list")
	if err == nil || !strings.Contains(stderr, "not trusted") || !strings.Contains(stderr, "--ca") || strings.Contains(stderr, token) {
		t.Fatalf("project list without the CA: err %v, stderr:\n%s\nwant a refusal naming --ca (and no token)", err, stderr)
	}
	// The same CLI with --ca for one command gets through.
	stranger.mustScion(t, "--ca", ca, "project", "list")

	admin := newHost(t, "admin")
	admin.mustScion(t, "hub", "add", "team", hub.URL, "--use", "--token", token, "--ca", ca)
	admin.mustScion(t, "project", "create", "default")

	// Register refuses plain http to a Hub that is not on loopback before
	// sending anything (nothing listens there).
	_, stderr, err = admin.scion("--hub", "http://192.0.2.10:8080", "runtime-broker", "register", "--name", "nope")
	if err == nil || !strings.Contains(stderr, "refusing plain http") || !strings.Contains(stderr, "--insecure-http") {
		t.Fatalf("register over plain http to a remote Hub: err %v, stderr:\n%s", err, stderr)
	}

	// A broker host whose hub list lacks the CA cannot register.
	b := &brokerHost{host: newHost(t, "tls-b1"), brokerName: "tls-b1"}
	b.mustScion(t, "hub", "add", "team", hub.URL, "--use", "--token", token)
	_, stderr, err = b.scion("runtime-broker", "register", "--name", "tls-b1")
	if err == nil || !strings.Contains(stderr, "not trusted") || !strings.Contains(stderr, "--ca") {
		t.Fatalf("register without the CA: err %v, stderr:\n%s", err, stderr)
	}
	var reg registration
	b.mustScionJSON(t, &reg, "--ca", ca, "runtime-broker", "register", "--name", "tls-b1")
	b.brokerID = reg.BrokerID
	credsPath := filepath.Join(b.home, "broker-credentials.yaml")
	creds, err := os.ReadFile(credsPath)
	if err != nil || !strings.Contains(string(creds), "caFile: "+ca) {
		t.Fatalf("broker-credentials.yaml (%v) does not keep the CA:\n%s", err, creds)
	}
	b.mustScion(t, "--ca", ca, "runtime-broker", "provide", "--project", "default")

	// The broker without its CA (the caFile line dropped): it does not
	// connect, and its log names the fix.
	if err := os.WriteFile(credsPath, []byte(strings.ReplaceAll(string(creds), "caFile: "+ca, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcessBroker := func() {
		b.proc = b.start(t, "broker-tls-b1", append([]string{"runtime-broker", "start", "--runtime", "process"}, hbFlags...)...)
	}
	startProcessBroker()
	wait.Eventually(t, 20*time.Second, pollInterval, func() error {
		if logs := b.proc.Logs(); !strings.Contains(logs, "not trusted") || !strings.Contains(logs, "--ca <file>") {
			return fmt.Errorf("the broker's log does not name the fix yet:\n%s", logs)
		}
		return nil
	})
	cl := client.New(hub.URL, token, client.WithHTTPClient(hub.hc))
	if bs := brokersByName(t, cl); bs["tls-b1"] == api.BrokerOnline {
		t.Fatal("a broker that does not trust the Hub's certificate is online")
	}
	b.proc.Kill9(t)
	if err := os.WriteFile(credsPath, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	startProcessBroker()
	waitBrokerOnline(t, cl, "tls-b1")

	// The agent calls the Hub itself with the scion CLI inside it, which
	// trusts the Hub through the CA its broker hands it (SCION_HUB_CA).
	out := filepath.Join(t.TempDir(), "agents.json")
	admin.mustScion(t, "start", "over-tls", "--", "sh", "-c",
		`scion list -o json > `+out+`.tmp 2>&1; mv `+out+`.tmp `+out+`; exec sleep 600`)
	t.Cleanup(func() { _, _, _ = admin.scion("delete", "over-tls") })
	ag := listedAgent(t, admin, "over-tls")
	if ag.Phase != api.PhaseRunning {
		t.Fatalf("agent over-tls is %s (%s), want running", ag.Phase, ag.StatusMessage)
	}
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		b, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		var seen []api.Agent
		if err := json.Unmarshal(b, &seen); err != nil || len(seen) != 1 || seen[0].Slug != "over-tls" {
			return fmt.Errorf("the agent's own 'scion list' over TLS gave %v:\n%s", err, b)
		}
		return nil
	})

	// Renewal: the files change, the same process serves the new
	// certificate, and the broker stays connected.
	pid := hub.proc.PID
	renewed.Write(t, cert, key)
	wait.Eventually(t, 10*time.Second, pollInterval, func() error {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(hub.URL, "https://"), &tls.Config{RootCAs: certs.Pool(renewed)})
		if err != nil {
			return err
		}
		defer conn.Close()
		if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(renewed.Serial) != 0 {
			return fmt.Errorf("serving serial %v, want the renewed %v", got, renewed.Serial)
		}
		return nil
	})
	if hub.proc.Exited() || hub.proc.PID != pid {
		t.Fatal("the Hub restarted to take the renewed certificate")
	}
	if !strings.Contains(hub.proc.Logs(), "tls certificate reloaded") {
		t.Errorf("the Hub does not log the reload:\n%s", hub.proc.Logs())
	}
	admin.mustScion(t, "stop", "over-tls")
	if ag = listedAgent(t, admin, "over-tls"); ag.Phase != api.PhaseStopped {
		t.Fatalf("after the renewal, agent over-tls is %s, want stopped", ag.Phase)
	}
	if n := strings.Count(b.proc.Logs(), "control channel down"); n > 0 {
		t.Errorf("the broker lost its channel %d times across the renewal:\n%s", n, b.proc.Logs())
	}
}

// brokersByName is each broker's status.
func brokersByName(t *testing.T, cl *client.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bs, err := cl.ListAllBrokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, b := range bs {
		m[b.Name] = b.Status
	}
	return m
}

// listedAgent is the agent named slug in `scion list -o json` on h.
func listedAgent(t *testing.T, h *host, slug string) api.Agent {
	t.Helper()
	var agents []api.Agent
	h.mustScionJSON(t, &agents, "list")
	for _, a := range agents {
		if a.Slug == slug {
			return a
		}
	}
	t.Fatalf("scion list has no agent %q: %+v", slug, agents)
	return api.Agent{}
}
