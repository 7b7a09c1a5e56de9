package system

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// The Docker system tests run the real bin/scion against the real Docker
// Engine of this machine (DOCKER_HOST or the default socket), through the
// Engine API. Without an engine they skip, except under CI=true where they
// fail. What they create on the engine is removed when they end: every
// container of the brokers they ran (found by the scion.broker_id label,
// whatever state the test left), and the demo image if it was not there
// before (dockerCleanupAfterAll).

var (
	engineOnce sync.Once
	engine     *client.Client
	engineErr  error

	demoOnce  sync.Once
	demoErr   error
	demoBuilt bool // this run built scion-demo:latest, so it removes it

	probeOnce sync.Once
	probeBin  string // the static fsprobe (testdata/fsprobe)
	probeDir  string
	probeErr  error
)

// requireDocker returns the Engine API client, skipping the test when no
// engine answers (failing it under CI=true).
func requireDocker(t *testing.T) *client.Client {
	t.Helper()
	requireBinary(t)
	if err := ensureEngine(); err != nil {
		skipOrFail(t, "no Docker Engine (set DOCKER_HOST or start dockerd): %v", err)
	}
	return engine
}

// ensureEngine makes the Engine API client once and checks that the
// engine answers.
func ensureEngine() error {
	engineOnce.Do(func() {
		engine, engineErr = docker.NewClient("")
		if engineErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := engine.Ping(ctx); err != nil {
			engineErr = fmt.Errorf("engine at %s does not answer: %w", engine.DaemonHost(), err)
		}
	})
	return engineErr
}

// requireDemoImage makes sure scion-demo:latest exists, building it the
// user's way (`scion image build-demo`) when it is missing. An image that
// was already there is shared with whoever built it and is left alone.
func requireDemoImage(t *testing.T) {
	t.Helper()
	requireDocker(t)
	if err := ensureDemoImage(); err != nil {
		t.Fatalf("demo image: %v", err)
	}
}

// ensureDemoImage builds the demo image once, when the engine lacks it.
func ensureDemoImage() error {
	if err := ensureEngine(); err != nil {
		return err
	}
	demoOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := engine.ImageInspect(ctx, docker.DemoImage); err == nil {
			return
		} else if !cerrdefs.IsNotFound(err) {
			demoErr = err
			return
		}
		home, err := os.MkdirTemp("", "scion-demo-build-")
		if err != nil {
			demoErr = err
			return
		}
		defer os.RemoveAll(home)
		cmd := exec.CommandContext(ctx, scionBin, "image", "build-demo")
		cmd.Env = (&host{home: filepath.Join(home, "scion"), user: home}).env()
		out, err := cmd.CombinedOutput()
		if err != nil {
			demoErr = fmt.Errorf("scion image build-demo: %v\n%s", err, out)
			return
		}
		demoBuilt = true
	})
	return demoErr
}

// requireProbe builds testdata/fsprobe (static) once and returns its path.
func requireProbe(t *testing.T) string {
	t.Helper()
	probeOnce.Do(func() {
		probeDir, probeErr = os.MkdirTemp("", "scion-fsprobe-")
		if probeErr != nil {
			return
		}
		probeBin = filepath.Join(probeDir, "fsprobe")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-trimpath", "-ldflags=-s -w", "-o", probeBin, "./test/system/testdata/fsprobe")
		cmd.Dir = moduleRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("go build ./test/system/testdata/fsprobe: %v\n%s", err, out)
		}
	})
	if probeErr != nil {
		skipOrFail(t, "%v", probeErr)
	}
	return probeBin
}

// dockerCleanupAfterAll runs once the package's tests are done: it removes
// the demo image if this run built it (without force: a container of
// someone else's that uses it by now keeps it) and the probe binary.
func dockerCleanupAfterAll() {
	if probeDir != "" {
		os.RemoveAll(probeDir)
	}
	if engine == nil {
		return
	}
	defer engine.Close()
	if !demoBuilt {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := engine.ImageRemove(ctx, docker.DemoImage, image.RemoveOptions{PruneChildren: true}); err != nil {
		fmt.Fprintf(os.Stderr, "system tests: leaving %s, which this run built: %v\n", docker.DemoImage, err)
	}
}

// requireGit skips (fails under CI) without a git binary: the brokers need
// it for the git sharing modes and the tests for the remote.
func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		skipOrFail(t, "git is not installed: %v", err)
	}
}

// brokerContainers lists every container of brokerID on the engine, in any
// state: what is really there, not what the broker or the Hub say.
func brokerContainers(t *testing.T, cl *client.Client, brokerID string) []container.Summary {
	t.Helper()
	return listContainers(t, cl, runtime.LabelBrokerID+"="+brokerID)
}

// agentContainers lists every container of agentID on the engine.
func agentContainers(t *testing.T, cl *client.Client, agentID string) []container.Summary {
	t.Helper()
	return listContainers(t, cl, runtime.LabelAgentID+"="+agentID)
}

func listContainers(t *testing.T, cl *client.Client, label string) []container.Summary {
	t.Helper()
	cs, err := listContainersErr(cl, label)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// listContainersErr lists the containers with label, in any state; it is
// for goroutines other than the test's, which must not call t.Fatal.
func listContainersErr(cl *client.Client, label string) ([]container.Summary, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := cl.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("list containers with label %s: %w", label, err)
	}
	return cs, nil
}

// inspect returns the engine's view of a container.
func inspect(t *testing.T, cl *client.Client, id string) container.InspectResponse {
	t.Helper()
	c, err := inspectErr(cl, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// inspectErr is inspect for goroutines other than the test's.
func inspectErr(cl *client.Client, id string) (container.InspectResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := cl.ContainerInspect(ctx, id)
	if err != nil {
		return c, fmt.Errorf("inspect container %s: %w", id, err)
	}
	return c, nil
}

// cleanupBrokerContainers removes, when the test ends, every container
// labelled with *brokerID (read then, so it may be learnt after this is
// registered). Register it before starting the broker's process: cleanups
// run last-in first-out, so the process is killed first and cannot race
// the removal.
func cleanupBrokerContainers(t *testing.T, cl *client.Client, brokerID *string) {
	t.Cleanup(func() {
		if *brokerID == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := cl.ContainerList(ctx, container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", runtime.LabelBrokerID+"="+*brokerID))})
		if err != nil {
			t.Errorf("cleanup: list containers of broker %s: %v", *brokerID, err)
			return
		}
		for _, c := range cs {
			err := cl.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
			if cerrdefs.IsConflict(err) {
				// "removal of container ... is already in progress": the
				// killed broker's own delete, which the engine finishes
				// without it; the container must still go.
				err = waitContainerGone(ctx, cl, c.ID)
			}
			if err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("cleanup: remove container %s: %v", c.ID, err)
			}
		}
		if len(cs) > 0 {
			t.Logf("cleanup: removed %d container(s) of broker %s", len(cs), *brokerID)
		}
	})
}

// waitContainerGone waits until the engine no longer knows container id.
func waitContainerGone(ctx context.Context, cl *client.Client, id string) error {
	for {
		if _, err := cl.ContainerInspect(ctx, id); cerrdefs.IsNotFound(err) {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("still there when the cleanup's time ran out: %w", ctx.Err())
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollInterval):
		}
	}
}

// workstationFile is what `server start --workstation` writes to
// $SCION_HOME/workstation.json.
type workstationFile struct {
	URL        string `json:"url"`
	AdminToken string `json:"adminToken"`
	BrokerID   string `json:"brokerId"`
	PID        int    `json:"pid"`
}

// dockerWorkstation is a workstation Hub whose local broker runs agents on
// the Docker Engine.
type dockerWorkstation struct {
	*hubProc
	brokerID string
	token    string
}

// startDockerWorkstation starts `scion server start --workstation
// --runtime docker` on a free port and waits until its local broker is
// online. Its containers are removed when the test ends.
func startDockerWorkstation(t *testing.T, h *host, cl *client.Client, extra ...string) *dockerWorkstation {
	t.Helper()
	port := FreePort(t)
	args := append([]string{"server", "start", "--workstation", "--runtime", "docker",
		"--listen", fmt.Sprintf("127.0.0.1:%d", port)}, extra...)
	ws := &dockerWorkstation{hubProc: &hubProc{host: h, URL: fmt.Sprintf("http://127.0.0.1:%d", port), args: args}}
	cleanupBrokerContainers(t, cl, &ws.brokerID)
	ws.restart(t)
	// workstation.json is written once the local broker exists; the CLI of
	// this host finds the Hub through it.
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		var f workstationFile
		b, err := os.ReadFile(filepath.Join(h.home, "workstation.json"))
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil {
			return err
		}
		if f.PID != ws.proc.PID || f.BrokerID == "" || f.AdminToken == "" {
			return fmt.Errorf("workstation.json is %+v, want pid %d with a broker and a token", f, ws.proc.PID)
		}
		ws.brokerID, ws.token = f.BrokerID, f.AdminToken
		return nil
	})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return h.brokerStatuses(map[string]string{"local": api.BrokerOnline})
	})
	return ws
}

// dockerBrokerHost is a machine running `scion runtime-broker start
// --runtime docker` against a team Hub.
type dockerBrokerHost struct {
	*brokerHost
	portRange string // --port-range, "" for the default
}

// setupDockerBroker registers a broker on a fresh host, makes it provide
// for the given projects and starts its process with the docker runtime
// and, unless portRange is "", that port range. Its containers are
// removed when the test ends.
func setupDockerBroker(t *testing.T, cl *client.Client, hub *hubProc, token, name, portRange string, projects ...string) *dockerBrokerHost {
	t.Helper()
	b := &dockerBrokerHost{brokerHost: &brokerHost{host: newHost(t, name), brokerName: name}, portRange: portRange}
	cleanupBrokerContainers(t, cl, &b.brokerID)
	b.useHub(t, hub.URL, token)
	var reg registration
	b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
	if reg.BrokerID == "" {
		t.Fatalf("register %s: no broker ID in %+v", name, reg)
	}
	b.brokerID = reg.BrokerID
	for _, p := range projects {
		b.mustScion(t, "runtime-broker", "provide", "--project", p)
	}
	b.startDocker(t)
	return b
}

func (b *dockerBrokerHost) startDocker(t *testing.T) {
	t.Helper()
	args := append([]string{"runtime-broker", "start", "--runtime", "docker"}, hbFlags...)
	if b.portRange != "" {
		args = append(args, "--port-range", b.portRange)
	}
	b.proc = b.start(t, "broker-"+b.brokerName, args...)
}

// smallPortRange returns n consecutive host ports that were free a moment
// ago, as a --port-range value, and its first port. The range lies below
// the kernel's ephemeral port range: a range inside it is taken, port by
// port, by the local ends of this machine's outgoing connections (the
// spoke fixture alone holds hundreds), and the broker then finds its pool
// used by other programs. Ranges handed out in this process never
// overlap, nor meet the default range the workstations' brokers use.
func smallPortRange(t *testing.T, n int) (string, int) {
	t.Helper()
	ephemeral := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				ephemeral = v
			}
		}
	}
	const floor = 10000
	if ephemeral-n <= floor {
		t.Fatalf("no room for a port range below the ephemeral ports (from %d)", ephemeral)
	}
	portRangesMu.Lock()
	defer portRangesMu.Unlock()
	for range 200 {
		lo := floor + rand.IntN(ephemeral-n-floor)
		if portRangeTaken(lo, n) {
			continue
		}
		if portsFree(lo, n) {
			portRanges = append(portRanges, [2]int{lo, lo + n - 1})
			return fmt.Sprintf("%d-%d", lo, lo+n-1), lo
		}
	}
	t.Fatal("no free port range")
	return "", 0
}

var (
	portRangesMu sync.Mutex
	portRanges   = [][2]int{broker.DefaultPortRange}
)

func portRangeTaken(lo, n int) bool {
	for _, r := range portRanges {
		if lo <= r[1] && lo+n-1 >= r[0] {
			return true
		}
	}
	return false
}

// portsFree reports whether every port of lo..lo+n-1 binds on all
// addresses (where Docker publishes an agent's port).
func portsFree(lo, n int) bool {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for p := lo; p < lo+n; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			return false
		}
		held = append(held, l)
	}
	return true
}

// agentDirs lists the agent directories under a broker data directory
// (<dataDir>/projects/*/agents/*): what a delete must leave none of.
func agentDirs(t *testing.T, dataDir string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dataDir, "projects", "*", "agents", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// agentsBySlug is `scion list --all -o json` keyed by agent name; the
// tests give agents names that are unique across projects.
func (h *host) agentsBySlug() (map[string]api.Agent, error) {
	var as []api.Agent
	if err := h.scionJSON(&as, "list", "--all"); err != nil {
		return nil, err
	}
	m := make(map[string]api.Agent, len(as))
	for _, a := range as {
		if _, dup := m[a.Slug]; dup {
			return nil, fmt.Errorf("two agents named %s: %+v", a.Slug, as)
		}
		m[a.Slug] = a
	}
	return m, nil
}

// scionCode runs a command that may exit non-zero and returns its exit
// code; err is only for a command that could not be run at all.
func (h *host) scionCode(stdin io.Reader, args ...string) (stdout, stderr string, code int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cliBound(args))
	defer cancel()
	cmd := exec.CommandContext(ctx, scionBin, args...)
	cmd.Env = h.env()
	cmd.Stdin = stdin
	var out, errB bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errB
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return out.String(), errB.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return out.String(), errB.String(), -1, fmt.Errorf("scion %s: %v: %s", strings.Join(args, " "), err, errB.String())
	}
	return out.String(), errB.String(), 0, nil
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// attachEcho runs `scion attach NAME` as a user at a terminal would: it
// types line, waits until the agent's answer comes back on the attach
// output, then ends its input and expects scion to detach and exit 0.
func (h *host) attachEcho(name, project, line string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, scionBin, "attach", name, "--project", project)
	cmd.Env = h.env()
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var out, errB lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errB
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	want := "agent got: " + line
	// Type the line once scion says it is attached, as a user would.
	sent := false
	var failed error // the write failed or scion exited: stop waiting
	_, err = wait.Until(15*time.Second, pollInterval, func() error {
		if strings.Contains(out.String(), want) {
			return nil
		}
		if !sent && strings.Contains(errB.String(), "attached to") {
			if _, err := io.WriteString(in, line+"\n"); err != nil {
				failed = fmt.Errorf("attach %s: write: %v", name, err)
				return nil
			}
			sent = true
		}
		select {
		case err := <-done:
			failed = fmt.Errorf("attach %s exited (%v) before echoing %q; stdout %q, stderr %q", name, err, line, out.String(), errB.String())
			return nil
		default:
		}
		return fmt.Errorf("attach %s: no %q (line sent: %v); stdout %q, stderr %q", name, want, sent, out.String(), errB.String())
	})
	if failed != nil {
		return failed
	}
	if err != nil {
		in.Close()
		return err
	}
	in.Close()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("attach %s: %v after its input ended; stderr %q", name, err, errB.String())
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("attach %s still running 10s after its input ended; stderr %q", name, errB.String())
	}
	if !strings.Contains(errB.String(), "detached from "+name) {
		return fmt.Errorf("attach %s: stderr %q lacks the detach message", name, errB.String())
	}
	return nil
}

// makeGitRemote makes a bare repository with one commit on main (files
// README.md and src/hello.txt) in a new directory under parent ("" for the
// test's temporary directory) and returns its file:// URL. A broker
// clones it only from under a root of server.broker.allow_local_git_remotes
// (a workstation's default: the user's home, a host's h.user).
func makeGitRemote(t *testing.T, parent string) string {
	t.Helper()
	dir := t.TempDir()
	if parent != "" {
		var err error
		if dir, err = os.MkdirTemp(parent, "remote-"); err != nil {
			t.Fatal(err)
		}
	}
	bare, work := filepath.Join(dir, "remote.git"), filepath.Join(dir, "work")
	env := append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=Scion Test", "-c", "user.email=test@scion.invalid",
			"-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "--quiet", "--bare", bare)
	git("--git-dir="+bare, "symbolic-ref", "HEAD", "refs/heads/main")
	git("init", "--quiet", work)
	for name, content := range map[string]string{"README.md": "scion system test repository\n", "src/hello.txt": "hello\n"} {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("-C", work, "add", ".")
	git("-C", work, "commit", "--quiet", "-m", "initial")
	git("-C", work, "push", "--quiet", bare, "HEAD:refs/heads/main")
	return "file://" + bare
}

// scionJSONCmd is scionJSON for a command with an agent command after
// "--": -o json has to come before it, or it would be the agent's.
func (h *host) scionJSONCmd(v any, args ...string) error {
	i := slices.Index(args, "--")
	if i < 0 {
		return h.scionJSON(v, args...)
	}
	out, _, err := h.scion(slices.Concat(args[:i], []string{"-o", "json"}, args[i:])...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("scion %s: %v; output:\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// forEach runs f for every item concurrently and fails the test with every
// error.
func forEach[T any](t *testing.T, items []T, f func(T) error) {
	t.Helper()
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(it)
		}()
	}
	wg.Wait()
	failed := false
	for _, err := range errs {
		if err != nil {
			t.Error(err)
			failed = true
		}
	}
	if failed {
		t.FailNow()
	}
}

// assertRunningCount checks the Hub's count of running agents on a broker.
func assertRunningCount(t *testing.T, h *host, broker string, want int) {
	t.Helper()
	m, err := h.brokers()
	if err != nil {
		t.Fatal(err)
	}
	if got := m[broker].RunningAgents; got != want {
		t.Errorf("broker %s: the Hub counts %d running agents, want %d", broker, got, want)
	}
}

func hasReadOnlyMount(ms []container.MountPoint, dest string) bool {
	for _, m := range ms {
		if m.Destination == dest && !m.RW {
			return true
		}
	}
	return false
}

func containerNames(cs []container.Summary) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s%v(%s)", c.ID[:12], c.Names, c.State))
	}
	return out
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// gitOutput runs git on the host and returns its output.
func gitOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
