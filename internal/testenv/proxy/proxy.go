// Package proxy runs a real HTTP CONNECT proxy for tests: Debian's
// tinyproxy, as a child of the test on a free loopback port with a
// generated configuration (only 127.0.0.1 may use it, CONNECT only to
// the ports the test names, no upstream proxy). It stands for the proxy
// in front of a spoke in the fleet's proxy tier. No system service is
// involved: .ci/run installs the package and nothing starts it.
//
// Need(t) skips a test when tinyproxy is not installed, except under
// CI=true, where it fails.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary returns tinyproxy's path: SCION_TINYPROXY when set, else
// tinyproxy on PATH or in /usr/bin. The error says how to get it.
func Binary() (string, error) {
	if p := os.Getenv("SCION_TINYPROXY"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("tinyproxy"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/tinyproxy"); err == nil {
		return "/usr/bin/tinyproxy", nil
	}
	return "", errors.New("proxy fixture: tinyproxy not found: apt-get install tinyproxy (.ci/run does)")
}

// Need returns tinyproxy's path, or skips t when it is missing (failing
// it under CI=true, where a missing real part must not pass unnoticed).
func Need(t testing.TB) string {
	t.Helper()
	p, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: %v", err)
		}
		t.Skipf("%v (set CI=true to make this fail)", err)
	}
	return p
}

// Proxy is a running tinyproxy.
type Proxy struct {
	// URL is the proxy's address as a proxy_url: http://127.0.0.1:PORT.
	URL string
	// Addr is its host:port.
	Addr string

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// Start runs tinyproxy for t, allowing CONNECT to connectPorts only (at
// least one), and waits until it accepts connections. It is stopped when
// t ends; Stop ends it sooner.
func Start(t testing.TB, connectPorts ...int) *Proxy {
	t.Helper()
	bin := Need(t)
	p, err := Launch(bin, t.TempDir(), connectPorts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Launch is Start for a program (bench/spoke): tinyproxy at bin, its files
// in dir, running until Stop.
func Launch(bin, dir string, connectPorts ...int) (*Proxy, error) {
	if len(connectPorts) == 0 {
		return nil, errors.New("proxy.Start: no CONNECT port: tinyproxy would allow every port")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := &Proxy{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, done: make(chan struct{})}
	p.URL = "http://" + p.Addr
	conf := filepath.Join(p.dir, "tinyproxy.conf")
	if err := os.WriteFile(conf, []byte(config(port, connectPorts, filepath.Join(p.dir, "tinyproxy.log"))), 0o600); err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(p.dir, "stderr"))
	if err != nil {
		return nil, err
	}
	// -d: stay in the foreground, a child of the test.
	p.cmd = exec.Command(bin, "-d", "-c", conf)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start tinyproxy: %w", err)
	}
	go func() {
		p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.waitListening(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("tinyproxy: %w\n%s", err, p.Log())
	}
	return p, nil
}

// config is tinyproxy's configuration: loopback only, CONNECT to the
// given ports only, no upstream, no Via header, logs in the test's
// directory. Running as root, tinyproxy keeps root (no User line): it
// binds an unprivileged port and writes only the test's files.
func config(port int, connectPorts []int, logFile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Port %d\nListen 127.0.0.1\nBindSame no\nTimeout 60\nMaxClients 50\n", port)
	b.WriteString("Allow 127.0.0.1\nDisableViaHeader Yes\nLogLevel Connect\n")
	fmt.Fprintf(&b, "LogFile %q\n", logFile)
	for _, p := range connectPorts {
		fmt.Fprintf(&b, "ConnectPort %d\n", p)
	}
	return b.String()
}

// waitListening polls until the port accepts a connection, or the
// process exits.
func (p *Proxy) waitListening(ctx context.Context) error {
	for {
		c, err := net.DialTimeout("tcp", p.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return errors.New("exited before it listened")
		case <-ctx.Done():
			return fmt.Errorf("not listening on %s: %w", p.Addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop ends tinyproxy (SIGTERM, then SIGKILL after five seconds).
func (p *Proxy) Stop() {
	p.once.Do(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// Log is tinyproxy's log so far (its log file, then its stderr): the
// CONNECT requests it served or refused.
func (p *Proxy) Log() string {
	a, _ := os.ReadFile(filepath.Join(p.dir, "tinyproxy.log"))
	b, _ := os.ReadFile(filepath.Join(p.dir, "stderr"))
	return string(a) + string(b)
}
