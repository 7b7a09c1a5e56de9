package system

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/testenv/sshd"
	"github.com/scion-go/scion/internal/wait"
)

// The delegated Jobs' system tests (spoke_jobs_test.go, issue 16,
// ADR-0046): a team Hub, broker processes on the fake or Docker runtime
// whose clusters.toml names spokes on the kube fixture's Spoke (a real
// kube-apiserver, kube-controller-manager and a kwok node whose pods run),
// reached over every tier through real parts (tinyproxy, Debian's sshd).
// One Spoke serves every TestSpoke* test (each in its own namespace): it
// takes ~30 s to start.

var (
	spokeOnce sync.Once
	spokeFix  *kube.Spoke
	spokeErr  error
)

// requireSpoke returns the package's Spoke, started on first use, or
// skips the test (fails it under CI=true) when its binaries are missing.
func requireSpoke(t *testing.T) *kube.Spoke {
	t.Helper()
	requireBinary(t)
	spokeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		start := time.Now()
		spokeFix, spokeErr = kube.StartSpoke(ctx, kube.SpokeOptions{})
		if spokeErr == nil {
			fmt.Fprintf(os.Stderr, "system tests: spoke fixture ready at %s in %v\n", spokeFix.URL, time.Since(start).Round(time.Millisecond))
		}
	})
	if spokeErr != nil {
		skipOrFail(t, "no spoke fixture: %v", spokeErr)
	}
	return spokeFix
}

// spokeCleanupAfterAll stops the shared Spoke once the package is done.
func spokeCleanupAfterAll() {
	if spokeFix != nil {
		spokeFix.Stop()
	}
}

// spokeNamespace is a fresh namespace bootstrapped as a spoke admin does
// (docs/spoke-bootstrap.yaml), with its least-privilege token.
func spokeNamespace(t *testing.T, s *kube.Spoke, prefix string) (ns, token string) {
	t.Helper()
	ns = fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
	token = s.BootstrapToken(t, ns)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	return ns, token
}

// writeTemp writes content to a 0600 file in a fresh temp directory.
func writeTemp(t *testing.T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// newJobsBroker registers broker name on the Hub, makes it provide for
// project default, stores secrets as its broker-scoped Hub secrets with
// the CLI (by admin, a hub admin), writes clusters.toml beside its
// settings.yaml and starts it on runtime rt ("fake" or "docker").
func newJobsBroker(t *testing.T, hub *hubProc, token string, admin *host, name, rt, clustersTOML string, secrets map[string][]byte) *brokerHost {
	t.Helper()
	b := &brokerHost{host: newHost(t, name), brokerName: name}
	if rt == "docker" {
		cleanupBrokerContainers(t, requireDocker(t), &b.brokerID)
	}
	b.useHub(t, hub.URL, token)
	var reg registration
	b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
	if reg.BrokerID == "" {
		t.Fatalf("register %s: %+v", name, reg)
	}
	b.brokerID = reg.BrokerID
	b.mustScion(t, "runtime-broker", "provide", "--project", "default")
	for n, v := range secrets {
		admin.mustScion(t, "hub", "secret", "set", n, "--broker", name, "--from-file", writeTemp(t, "secret", v))
	}
	if err := os.WriteFile(filepath.Join(b.home, "clusters.toml"), []byte(clustersTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	b.startJobs(t, rt)
	return b
}

func (b *brokerHost) startJobs(t *testing.T, rt string) {
	t.Helper()
	b.proc = b.start(t, "broker-"+b.brokerName, append([]string{"runtime-broker", "start", "--runtime", rt}, hbFlags...)...)
}

// jobsHub is a team Hub with an admin CLI and project default.
func jobsHub(t *testing.T) (*hubProc, string, *host) {
	t.Helper()
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	return hub, token, admin
}

// waitBrokerLog waits until the broker's log has a line with every one of
// parts (its startup sweep of a cluster, a retry).
func waitBrokerLog(t *testing.T, p *Proc, timeout time.Duration, parts ...string) string {
	t.Helper()
	var found string
	wait.Eventually(t, timeout, 100*time.Millisecond, func() error {
		if p.Exited() {
			t.Fatalf("%s exited (%v):\n%s", p.Name, p.ExitErr(), p.Logs())
		}
		if l := logLine(p, parts...); l != "" {
			found = l
			return nil
		}
		return fmt.Errorf("%s logged no line with %q", p.Name, parts)
	})
	return found
}

// logLine is the first line of p's output holding every one of parts.
func logLine(p *Proc, parts ...string) string {
	b, _ := os.ReadFile(p.Stderr)
	o, _ := os.ReadFile(p.Stdout)
	sc := bufio.NewScanner(bytes.NewReader(append(b, o...)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		for _, s := range parts {
			if !strings.Contains(sc.Text(), s) {
				continue next
			}
		}
		return sc.Text()
	}
	return ""
}

// jobAgent is an agent on a fake-runtime broker, and the CLI as that
// agent: the environment its broker gave it (Hub endpoint, its token, ID
// and project, read back with the fake runtime's `env NAME`), in a HOME
// of its own.
type jobAgent struct {
	name, id string
	h        *host
	env      []string
	// docker: the agent is a Docker container with the demo image, and
	// the CLI runs inside it (scion exec NAME -- scion ...) as admin's.
	docker *host
}

// startDockerAgent starts agent name (the demo image, which carries the
// scion binary) on a Docker broker; its CLI runs inside its container.
func startDockerAgent(t *testing.T, admin *host, broker, name string) *jobAgent {
	t.Helper()
	var a api.Agent
	if err := admin.scionJSONCmd(&a, "start", name, "--broker", broker, "--", "scion", "agent-demo", "--stay", "--steps", "0"); err != nil {
		t.Fatal(err)
	}
	if a.Phase != api.PhaseRunning {
		t.Fatalf("agent %s: phase %s (%s)", name, a.Phase, a.StatusMessage)
	}
	t.Cleanup(func() { _, _, _ = admin.scion("delete", name) })
	ag := &jobAgent{name: name, id: a.ID, h: newHost(t, "agent-"+name), docker: admin}
	// The image has no env(1): the container's environment is what the
	// engine started its process with.
	ag.env = dockerAgentEnv(t, ag.id)
	if ag.token() == "" {
		t.Fatalf("agent %s's environment has no %s", name, api.EnvAgentToken)
	}
	return ag
}

// dockerAgentEnv is the environment of agent id's container.
func dockerAgentEnv(t *testing.T, id string) []string {
	t.Helper()
	cl := requireDocker(t)
	cs := agentContainers(t, cl, id)
	if len(cs) != 1 {
		t.Fatalf("agent %s has %d containers", id, len(cs))
	}
	return inspect(t, cl, cs[0].ID).Config.Env
}

// command is the process that runs scion args as the agent.
func (a *jobAgent) command(ctx context.Context, args ...string) *exec.Cmd {
	if a.docker != nil {
		cmd := exec.CommandContext(ctx, scionBin, append([]string{"exec", a.name, "--", "scion"}, args...)...)
		cmd.Env = a.docker.env()
		return cmd
	}
	cmd := exec.CommandContext(ctx, scionBin, args...)
	cmd.Env = append(a.h.env(), a.env...)
	return cmd
}

// startFakeAgent starts agent name on broker and reads its identity.
func startFakeAgent(t *testing.T, admin *host, broker, name string) *jobAgent {
	t.Helper()
	var a api.Agent
	if err := admin.scionJSONCmd(&a, "start", name, "--broker", broker, "--", "sleep", "3600"); err != nil {
		t.Fatal(err)
	}
	if a.Phase != api.PhaseRunning {
		t.Fatalf("agent %s: phase %s (%s)", name, a.Phase, a.StatusMessage)
	}
	fa := &jobAgent{name: name, id: a.ID, h: newHost(t, "agent-"+name)}
	for _, k := range []string{api.EnvHubEndpoint, api.EnvAgentToken, api.EnvAgentID, api.EnvProject} {
		out := strings.TrimSpace(admin.mustScion(t, "exec", name, "--", "env", k))
		if out == "" {
			t.Fatalf("agent %s has no %s", name, k)
		}
		fa.env = append(fa.env, k+"="+out)
	}
	return fa
}

// token is the agent's token, as its environment holds it.
func (a *jobAgent) token() string {
	for _, kv := range a.env {
		if v, ok := strings.CutPrefix(kv, api.EnvAgentToken+"="); ok {
			return v
		}
	}
	return ""
}

// cliResult is one CLI run: its output, exit code and how long it took.
type cliResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d after %v; stdout %q; stderr %q", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// run runs scion as the agent, bounded by timeout.
func (a *jobAgent) run(t *testing.T, timeout time.Duration, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := a.command(ctx, args...)
	var out, errB bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errB
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errB.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("scion %s (as agent %s) still running after %v: %s", strings.Join(args, " "), a.name, timeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("scion %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// startJobRun runs `scion job run` as the agent in the background; the
// result comes on the channel.
func (a *jobAgent) startJobRun(t *testing.T, timeout time.Duration, args ...string) <-chan cliResult {
	ch := make(chan cliResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := a.command(ctx, append([]string{"job", "run"}, args...)...)
		var out, errB bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errB
		start := time.Now()
		err := cmd.Run()
		r := cliResult{stdout: out.String(), stderr: errB.String(), took: time.Since(start), code: -1}
		var ee *exec.ExitError
		if err == nil {
			r.code = 0
		} else if errors.As(err, &ee) && ctx.Err() == nil {
			r.code = ee.ExitCode()
		}
		ch <- r
	}()
	return ch
}

// jobOf reads the Job as the agent sees it (scion job show -o json).
func (a *jobAgent) jobOf(t *testing.T, id string) api.Job {
	t.Helper()
	r := a.run(t, cliTimeout, "job", "show", id, "-o", "json")
	if r.code != 0 {
		t.Fatalf("scion job show %s: %s", id, r)
	}
	var j api.Job
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("scion job show %s -o json: %v: %q", id, err, r.stdout)
	}
	return j
}

// jobIDOf is the Job ID in `scion job run`'s progress lines ("job ID on
// CLUSTER: STATE...").
func jobIDOf(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "job "); ok {
			if id, _, ok := strings.Cut(rest, " "); ok {
				return id
			}
		}
	}
	return ""
}

// spokeJobOfCluster waits for the agent's Job on cluster (by labels
// scion.dev/agent and scion.dev/cluster) and returns its name.
func spokeJobOfCluster(t *testing.T, s *kube.Spoke, ns, agentID, cluster string, timeout time.Duration) string {
	t.Helper()
	var name string
	wait.Eventually(t, timeout, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := s.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "scion.dev/agent=" + agentID + ",scion.dev/cluster=" + cluster})
		if err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("%d Jobs of agent %s in %s", len(l.Items), agentID, ns)
		}
		name = l.Items[0].Name
		return nil
	})
	return name
}

// ledgerRow is the Job's row in the Hub's SQLite database.
func ledgerRow(t *testing.T, hub *hubProc, id string) (cluster, tier, state string) {
	t.Helper()
	db := hubDB{path: filepath.Join(hub.host.home, "hub.db")}.open(t)
	defer db.Close()
	err := db.QueryRow(`SELECT cluster, tier, state FROM jobs WHERE id = ?`, id).Scan(&cluster, &tier, &state)
	if errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("no ledger row for job %s", id)
	}
	if err != nil {
		t.Fatal(err)
	}
	return cluster, tier, state
}

// blackhole is a loopback listener that accepts connections and never
// answers (a firewall dropping the replies, a hung server).
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// spokePort is the Spoke's API server port.
func spokePort(t *testing.T, s *kube.Spoke) int {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// bastion is Debian's sshd for the bastion tier, with the broker's key.
type bastion struct {
	*sshd.Server
	key []byte // the private key (PEM), the broker's key_secret
}

func startBastion(t *testing.T) *bastion {
	t.Helper()
	signer, pem := sshd.NewKey(t)
	return &bastion{Server: sshd.Start(t, signer.PublicKey()), key: pem}
}

// listener is the sshd process listening on the bastion's port (found by
// its config file's Port line: sshd.Server does not export its process).
func (b *bastion) listener(t *testing.T) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(b.Addr)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		// sshd rewrites its command line ("sshd: /usr/sbin/sshd -D -e -f
		// CONF [listener] ..."): look for -f among its words.
		args := strings.Fields(strings.ReplaceAll(string(raw), "\x00", " "))
		if len(args) == 0 || !strings.Contains(args[0], "sshd") {
			continue
		}
		for i, a := range args[:len(args)-1] {
			if a != "-f" {
				continue
			}
			conf, err := os.ReadFile(args[i+1])
			if err == nil && bytes.Contains(conf, []byte("Port "+port+"\n")) && !strings.Contains(string(raw), "sshd-session") {
				return pid
			}
		}
	}
	t.Fatalf("no sshd process listens on %s", b.Addr)
	return 0
}

// freeze stops the whole bastion (the listener and the sessions serving
// the tunnel) with SIGSTOP; the returned func thaws it (SIGCONT), and is
// also run when the test ends.
func (b *bastion) freeze(t *testing.T) (thaw func()) {
	t.Helper()
	pid := b.listener(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	n := b.SignalSessions(syscall.SIGSTOP)
	t.Logf("bastion frozen: sshd %d and %d session process(es)", pid, n)
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			b.SignalSessions(syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGCONT)
		})
	}
	t.Cleanup(thaw)
	return thaw
}

// bastionJobsBroker starts a Jobs Hub and a fake-runtime broker, name,
// whose one cluster block, bast, reaches the spoke's namespace prefix-*
// through bast with the given request_timeout and status_retry (connect
// 2 s, keep-alives every 1 s, two missed), and waits until the broker is
// online. It returns the namespace and the Hub's admin.
func bastionJobsBroker(t *testing.T, s *kube.Spoke, bast *bastion, prefix, name, requestTimeout, statusRetry string) (ns string, admin *host) {
	t.Helper()
	ns, tok := spokeNamespace(t, s, prefix)
	hub, token, admin := jobsHub(t)
	fleetFile := fmt.Sprintf(`
[clusters.bast]
kubeconfig_secret = "SPOKE_KUBECONFIG"
connect_timeout = "2s"
request_timeout = %q
status_retry = %q
[clusters.bast.bastion]
host = %q
user = %q
key_secret = "SPOKE_SSH_KEY"
known_hosts = %q
keepalive_interval = "1s"
keepalive_max = 2
`, requestTimeout, statusRetry, bast.Addr, sshd.User(t), bast.KnownHosts())
	newJobsBroker(t, hub, token, admin, name, "fake", fleetFile, map[string][]byte{
		"SPOKE_KUBECONFIG": s.KubeconfigBytes(s.URL, tok, ns),
		"SPOKE_SSH_KEY":    bast.key,
	})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{name: api.BrokerOnline})
	})
	return ns, admin
}
