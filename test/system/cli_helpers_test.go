package system

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// host is one simulated machine: its own SCION_HOME (and HOME, so that
// nothing ever falls back to the real ~/.scion) and a directory for the
// logs of the processes it runs.
type host struct {
	name string
	home string // SCION_HOME
	user string // HOME
	logs string
	// extra is more environment for this host's processes (its machine
	// identity: a key file, a metadata server).
	extra []string
}

func newHost(t *testing.T, name string) *host {
	t.Helper()
	dir := t.TempDir()
	h := &host{name: name, home: filepath.Join(dir, "scion"), user: filepath.Join(dir, "user"), logs: filepath.Join(dir, "logs")}
	for _, d := range []string{h.home, h.user, h.logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// env is the test's environment without anything that would point the CLI
// at another Hub (the tests may themselves run inside a Scion agent).
func (h *host) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// Nor the machine's own cloud identity: a host has what the test
		// gives it (extra).
		if strings.HasPrefix(k, "SCION_") || k == "HOME" || k == "GOOGLE_APPLICATION_CREDENTIALS" || k == "GCE_METADATA_HOST" || k == "K_SERVICE" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "SCION_HOME="+h.home, "HOME="+h.user)
	return append(env, h.extra...)
}

// cliTimeout bounds one CLI invocation; every command here is a handful
// of requests on loopback.
const cliTimeout = 30 * time.Second

// createTimeout bounds a create or lifecycle action instead: that command
// waits on the broker's runtime, past the Hub's dispatch timeout when it
// has to (the CLI asks again for an outcome the Hub could not tell yet),
// and a Docker Engine that a parallel test floods with 100 creates and
// their teardowns has taken more than 30 s to create or restart one more
// container.
const createTimeout = 3 * time.Minute

// cliBound is the bound of the CLI command args.
func cliBound(args []string) time.Duration {
	if len(args) > 0 && slices.Contains([]string{"create", "start", "stop", "restart", "suspend", "resume"}, args[0]) {
		return createTimeout
	}
	return cliTimeout
}

// scion runs one CLI command on this host and returns its output.
func (h *host) scion(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cliBound(args))
	defer cancel()
	cmd := exec.CommandContext(ctx, scionBin, args...)
	cmd.Env = h.env()
	var out, errB bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errB
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("scion %s (on %s): %v: %s", strings.Join(args, " "), h.name, err, strings.TrimSpace(errB.String()))
	}
	return out.String(), errB.String(), err
}

// mustScion runs a command that has to succeed.
func (h *host) mustScion(t *testing.T, args ...string) string {
	t.Helper()
	out, _, err := h.scion(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scionJSON runs a command with -o json and decodes its output into v.
func (h *host) scionJSON(v any, args ...string) error {
	out, _, err := h.scion(append(args, "-o", "json")...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("scion %s -o json: %v; output:\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// mustScionJSON is scionJSON for a command that has to succeed.
func (h *host) mustScionJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	if err := h.scionJSON(v, args...); err != nil {
		t.Fatal(err)
	}
}

// start runs a long-lived scion process on this host.
func (h *host) start(t *testing.T, name string, args ...string) *Proc {
	t.Helper()
	return StartProc(t, h.logs, name, h.env(), scionBin, args...)
}

// brokers is `scion hub brokers -o json`, keyed by name. Two records with
// one name are an error: the Hub must never duplicate a broker.
func (h *host) brokers() (map[string]api.RuntimeBroker, error) {
	var bs []api.RuntimeBroker
	if err := h.scionJSON(&bs, "hub", "brokers"); err != nil {
		return nil, err
	}
	m := map[string]api.RuntimeBroker{}
	for _, b := range bs {
		if _, dup := m[b.Name]; dup {
			return nil, fmt.Errorf("hub brokers lists %q twice: %+v", b.Name, bs)
		}
		m[b.Name] = b
	}
	return m, nil
}

// brokerStatuses checks that the Hub lists exactly the brokers in want
// with the given statuses.
func (h *host) brokerStatuses(want map[string]string) error {
	m, err := h.brokers()
	if err != nil {
		return err
	}
	if len(m) != len(want) {
		return fmt.Errorf("hub brokers lists %d brokers, want %d: %v", len(m), len(want), statusSummary(m))
	}
	for name, st := range want {
		b, ok := m[name]
		if !ok {
			return fmt.Errorf("broker %s missing: %v", name, statusSummary(m))
		}
		if b.Status != st {
			return fmt.Errorf("broker %s is %s, want %s: %v", name, b.Status, st, statusSummary(m))
		}
	}
	return nil
}

func statusSummary(m map[string]api.RuntimeBroker) string {
	var parts []string
	for n, b := range m {
		parts = append(parts, fmt.Sprintf("%s(%s)=%s", n, b.ID, b.Status))
	}
	return strings.Join(parts, " ")
}

// pollInterval is how often the tests look at a condition (wait.Eventually,
// wait.Consistently); a CLI call takes about 10-20 ms, so this keeps
// measured times accurate to ~50 ms.
const pollInterval = 25 * time.Millisecond

// hubProc is a Hub process that can be killed and started again with the
// same arguments: same database, same port.
type hubProc struct {
	host *host
	URL  string
	args []string
	proc *Proc
	// hc is the client of the readiness check (nil: plain http); a
	// Hub on TLS needs one that trusts its certificate.
	hc *http.Client
}

// startTeamHub starts `scion server start --enable-hub` on a free port
// with its SQLite database in the host's SCION_HOME.
func startTeamHub(t *testing.T, h *host, extra ...string) *hubProc {
	t.Helper()
	port := FreePort(t)
	args := append([]string{"server", "start", "--enable-hub", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--db", filepath.Join(h.home, "hub.db")}, extra...)
	hp := &hubProc{host: h, URL: fmt.Sprintf("http://127.0.0.1:%d", port), args: args}
	hp.restart(t)
	return hp
}

// startWorkstationHub starts `scion server start --workstation` (Hub and
// local broker in one process) with the fake runtime on a free port.
func startWorkstationHub(t *testing.T, h *host, extra ...string) *hubProc {
	t.Helper()
	port := FreePort(t)
	args := append([]string{"server", "start", "--workstation", "--runtime", "fake",
		"--listen", fmt.Sprintf("127.0.0.1:%d", port)}, extra...)
	hp := &hubProc{host: h, URL: fmt.Sprintf("http://127.0.0.1:%d", port), args: args}
	hp.restart(t)
	return hp
}

// restart starts the Hub process (again) and waits until it is ready.
func (hp *hubProc) restart(t *testing.T) {
	t.Helper()
	if hp.proc != nil && !hp.proc.Exited() {
		t.Fatalf("restart: the previous hub (pid %d) is still running", hp.proc.PID)
	}
	hp.proc = hp.host.start(t, "hub", hp.args...)
	waitReadyWith(t, hp.hc, hp.URL, hp.proc, 15*time.Second)
}

// waitReady waits for GET /readyz to answer 200, failing at once if the
// process died (a port already taken, a database that will not open).
func waitReady(t *testing.T, url string, p *Proc, timeout time.Duration) {
	t.Helper()
	waitReadyWith(t, nil, url, p, timeout)
}

// waitReadyWith is waitReady with hc's transport (nil: the default).
func waitReadyWith(t *testing.T, hc *http.Client, url string, p *Proc, timeout time.Duration) {
	t.Helper()
	if hc == nil {
		hc = &http.Client{}
	}
	hc = &http.Client{Transport: hc.Transport, Timeout: 2 * time.Second}
	wait.Eventually(t, timeout, pollInterval, func() error {
		if p.Exited() {
			t.Fatalf("%s exited before it was ready (%v):\n%s", p.Name, p.ExitErr(), p.Logs())
		}
		resp, err := hc.Get(url + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /readyz: %s", resp.Status)
		}
		return nil
	})
}

// adminToken reads the bootstrap admin token a fresh team Hub writes to
// $SCION_HOME/hub-admin-token.
func (hp *hubProc) adminToken(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hp.host.home, "hub-admin-token"))
	if err != nil {
		t.Fatalf("the team Hub wrote no admin token: %v", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		t.Fatal("hub-admin-token is empty")
	}
	return tok
}

// useHub points host's CLI at the Hub, signed in with token.
func (h *host) useHub(t *testing.T, url, token string) {
	t.Helper()
	h.mustScion(t, "hub", "add", "h", url, "--use", "--token", token)
}
