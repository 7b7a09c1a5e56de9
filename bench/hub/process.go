package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// The separate-process shape: the Hub (`scion server start --enable-hub`)
// and one broker (`scion runtime-broker start --runtime fake`) run as
// their own processes on loopback, as a team runs them, and this process
// is only the HTTP client. Each daemon runs in its own process group; the
// bench kills the groups when it ends, fails or is interrupted, and the
// kernel kills them (Pdeathsig) if the bench itself is killed.

// scionBin is the scion binary the process shape runs: $SCION_BIN, else
// one built into the bench's directory (removed at the end).
var (
	scionBinOnce sync.Once
	scionBinPath string
	scionBinErr  error
)

func scionBinary() (string, error) {
	scionBinOnce.Do(func() {
		if p := os.Getenv("SCION_BIN"); p != "" {
			scionBinPath = p
			return
		}
		dir, err := os.MkdirTemp(benchDir(), "scion-bench-bin")
		if err != nil {
			scionBinErr = err
			return
		}
		removeLater(dir)
		scionBinPath = filepath.Join(dir, "scion")
		// As `make build` builds it.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", scionBinPath, "./cmd/scion")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Dir = moduleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			scionBinErr = fmt.Errorf("go build ./cmd/scion: %v\n%s", err, out)
		}
	})
	return scionBinPath, scionBinErr
}

// moduleRoot is the directory of go.mod (the bench runs from anywhere in
// the repository).
func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "."
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// daemon is a scion process the bench started.
type daemon struct {
	name string
	cmd  *exec.Cmd
	logs string
	done chan struct{}
}

var (
	daemonsMu sync.Mutex
	daemons   []*daemon
)

// killDaemons kills every daemon's process group and waits for it.
func killDaemons() {
	daemonsMu.Lock()
	ds := daemons
	daemons = nil
	daemonsMu.Unlock()
	for _, d := range ds {
		d.kill()
	}
}

func (d *daemon) kill() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
}

// stop asks the daemon to shut down (SIGTERM, which writes its CPU profile
// when it has one) and kills its group if it has not ended after 15 s.
func (d *daemon) stop() {
	_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		fmt.Fprintf(os.Stderr, "%s did not stop on SIGTERM; killed\n", d.name)
	}
	d.kill()
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *daemon) tail() string {
	b, _ := os.ReadFile(d.logs)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// cpu is the process's user+system CPU time so far, from /proc/PID/stat.
func (d *daemon) cpu() time.Duration {
	return procCPU(d.cmd.Process.Pid)
}

// clockTick is USER_HZ: Linux reports utime and stime in 1/100 s.
const clockTick = 10 * time.Millisecond

func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(ut+st) * clockTick
}

// host is one simulated machine of the process shape: its own SCION_HOME
// and HOME, so nothing reaches the real ~/.scion.
type host struct {
	home, user string
	extraEnv   []string
}

func newHost(dir, name string) (*host, error) {
	h := &host{home: filepath.Join(dir, name, "scion"), user: filepath.Join(dir, name, "user")}
	for _, d := range []string{h.home, h.user} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *host) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SCION_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "SCION_HOME="+h.home, "HOME="+h.user), h.extraEnv...)
}

// scion runs one CLI command on h.
func (h *host) scion(args ...string) (string, error) {
	bin, err := scionBinary()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = h.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scion %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// start runs a long-lived scion process on h in its own process group.
func (h *host) start(name string, args ...string) (*daemon, error) {
	bin, err := scionBinary()
	if err != nil {
		return nil, err
	}
	logs := filepath.Join(h.home, name+".log")
	f, err := os.Create(logs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = h.env()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{name: name, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	daemonsMu.Lock()
	daemons = append(daemons, d)
	daemonsMu.Unlock()
	return d, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// procSetup is a running Hub process with one broker process online.
type procSetup struct {
	hub, broker *daemon
	cl          *client.Client
	brokerName  string
	cleanup     func()
}

// startProcesses starts a Hub on eng (a SQLite file, or a fresh
// PostgreSQL database) and one broker with the fake runtime, registered
// and providing for project "default", as an operator sets them up with
// the CLI. profileDir, when set, makes both write a CPU profile there when
// they stop (SCION_CPUPROFILE).
func startProcesses(ctx context.Context, eng, profileDir string) (*procSetup, error) {
	dir, err := os.MkdirTemp(benchDir(), "scion-bench-proc")
	if err != nil {
		return nil, err
	}
	ps := &procSetup{brokerName: "bench-00"}
	var dropDB func()
	ps.cleanup = func() {
		for _, d := range []*daemon{ps.broker, ps.hub} {
			if d != nil {
				d.stop()
			}
		}
		if dropDB != nil {
			dropDB()
		}
		removeLater(dir)
	}
	fail := func(err error) (*procSetup, error) {
		for _, d := range []*daemon{ps.broker, ps.hub} {
			if d != nil && d.exited() {
				err = fmt.Errorf("%w\n%s exited; its log ends:\n%s", err, d.name, d.tail())
			}
		}
		ps.cleanup()
		return nil, err
	}
	db := filepath.Join(dir, "hub.db")
	if eng == "postgres" {
		db, dropDB, err = createPGDatabase(ctx)
		if err != nil {
			return fail(err)
		}
	} else if eng != "sqlite" {
		return fail(fmt.Errorf("unknown engine %q", eng))
	}
	hh, err := newHost(dir, "hub")
	if err != nil {
		return fail(err)
	}
	bh, err := newHost(dir, "broker")
	if err != nil {
		return fail(err)
	}
	if profileDir != "" {
		hh.extraEnv = []string{"SCION_CPUPROFILE=" + filepath.Join(profileDir, "hub-"+eng+".pprof")}
		bh.extraEnv = []string{"SCION_CPUPROFILE=" + filepath.Join(profileDir, "broker-"+eng+".pprof")}
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if ps.hub, err = hh.start("hub", "server", "start", "--enable-hub", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--db", db); err != nil {
		return fail(err)
	}
	var tok string
	if err := waitFor(15*time.Second, ps.hub, func() error {
		b, err := os.ReadFile(filepath.Join(hh.home, "hub-admin-token"))
		if err != nil {
			return err
		}
		tok = strings.TrimSpace(string(b))
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /readyz: %s", resp.Status)
		}
		return nil
	}); err != nil {
		return fail(fmt.Errorf("hub not ready: %w", err))
	}
	for _, args := range [][]string{
		{"hub", "add", "h", url, "--use", "--token", tok},
		{"project", "create", "default"},
		{"runtime-broker", "register", "--name", ps.brokerName},
		{"runtime-broker", "provide", "--project", "default"},
	} {
		if _, err := bh.scion(args...); err != nil {
			return fail(err)
		}
	}
	if ps.broker, err = bh.start("broker", "runtime-broker", "start", "--runtime", "fake"); err != nil {
		return fail(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	ps.cl = client.New(url, tok, client.WithHTTPClient(hc))
	if err := waitFor(15*time.Second, ps.broker, func() error {
		b, err := ps.cl.GetBroker(ctx, ps.brokerName)
		if err != nil {
			return err
		}
		if b.Status != api.BrokerOnline {
			return fmt.Errorf("broker is %s", b.Status)
		}
		return nil
	}); err != nil {
		return fail(fmt.Errorf("broker not online: %w", err))
	}
	if _, err := ps.cl.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 0}); err != nil {
		return fail(err)
	}
	return ps, nil
}

// waitFor polls f until it succeeds, d exits, or timeout passes.
func waitFor(timeout time.Duration, d *daemon, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if d.exited() || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createPGDatabase makes a fresh database for one Hub process and returns
// its URL and a function that drops it.
func createPGDatabase(ctx context.Context) (string, func(), error) {
	admin := os.Getenv("SCION_TEST_POSTGRES_URL")
	if admin == "" {
		return "", nil, fmt.Errorf("SCION_TEST_POSTGRES_URL is not set (run .ci/postgres.sh)")
	}
	name := fmt.Sprintf("scion_bench_%d", time.Now().UnixNano())
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	return replaceDB(admin, name), func() {
		if c, err := pgx.Connect(context.Background(), admin); err == nil {
			c.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}, nil
}

// runProcess measures n creates at concurrency conc against a fresh Hub
// process and broker process, with the Hub's and the broker's CPU time
// over the measured creates.
func runProcess(eng string, conc, n int, profileDir string) (result, error) {
	ctx := context.Background()
	ps, err := startProcesses(ctx, eng, profileDir)
	if err != nil {
		return result{}, err
	}
	defer ps.cleanup()
	create := func(name string, _ int) error {
		_, err := ps.cl.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Broker: ps.brokerName, Start: true, Command: []string{"x"}})
		return err
	}
	var hub0, br0, self0 time.Duration
	res, err := drive(conc, n, create, func() {
		hub0, br0, self0 = ps.hub.cpu(), ps.broker.cpu(), procCPU(os.Getpid())
	})
	if err != nil {
		return res, err
	}
	res.hubCPU = (ps.hub.cpu() - hub0) / time.Duration(n)
	res.brokerCPU = (ps.broker.cpu() - br0) / time.Duration(n)
	res.selfCPU = (procCPU(os.Getpid()) - self0) / time.Duration(n)
	return res, nil
}
