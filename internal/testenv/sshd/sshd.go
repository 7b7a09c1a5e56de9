// Package sshd runs Debian's openssh-server as a child of a test, on a
// loopback port with its own host key and authorized_keys in a temp dir:
// the real bastion of the SSH tier's tests (spoke/tunnel, spoke/connect).
// A missing sshd skips the test, except under CI=true, where it fails
// (.ci/run installs openssh-server).
package sshd

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Server is a running sshd.
type Server struct {
	// Addr is its 127.0.0.1:port.
	Addr string
	// HostKey is the key it presents.
	HostKey ssh.PublicKey
	// Log is its output (-e: the log goes to stderr).
	Log    *Log
	cmd    *exec.Cmd
	exited chan struct{}
}

// Log is a buffer safe for the child's writes and the test's reads.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Log) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// Binary is sshd's absolute path (sshd re-executes itself and insists on
// one): on PATH or /usr/sbin/sshd.
func Binary() (string, error) {
	path, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr == nil {
			path, err = "/usr/sbin/sshd", nil
		}
	}
	if err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// Need finds sshd, or skips t (fails it under CI=true, where a missing
// real part must not pass unnoticed).
func Need(t testing.TB) string {
	t.Helper()
	path, err := Binary()
	if err == nil && testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("sshd: skipped with -short")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: no sshd (apt-get install openssh-server): %v", err)
		}
		t.Skipf("no sshd (apt-get install openssh-server; CI=true makes this fail): %v", err)
	}
	return path
}

// Start runs `sshd -D -e -f <config>` as a child of the test, as the
// current user (User), accepting the client keys for public-key login and
// TCP forwarding. It is stopped, with its sessions, when t ends.
func Start(t testing.TB, clients ...ssh.PublicKey) *Server {
	t.Helper()
	bin := Need(t)
	s, err := Launch(bin, t.TempDir(), clients...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sshd log:\n%s", s.Log.String())
		}
	})
	return s
}

// Launch is Start for a program (bench/spoke): sshd at bin, its files in
// dir, running until Stop. It returns once sshd accepts connections.
func Launch(bin, dir string, clients ...ssh.PublicKey) (*Server, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	host, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(hostKey, pem.EncodeToMemory(blk), 0o600); err != nil {
		return nil, err
	}
	var keys []byte
	for _, k := range clients {
		keys = append(keys, ssh.MarshalAuthorizedKey(k)...)
	}
	if err := os.WriteFile(auth, keys, 0o600); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// Debian's sshd refuses to start without its privilege separation
		// directory, which only the system service would create.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(strings.Join([]string{
		"Port " + strconv.Itoa(port),
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + auth,
		"PidFile none",
		"UsePAM no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"AllowTcpForwarding yes",
		"StrictModes no", // the temp dir is not the user's home
		"UseDNS no",
		"MaxStartups 100",
		"LogLevel INFO",
		"",
	}, "\n")), 0o600); err != nil {
		return nil, err
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), HostKey: host.PublicKey(), Log: &Log{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "-D", "-e", "-f", conf)
	s.cmd.Stdout, s.cmd.Stderr = s.Log, s.Log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sshd: %w", err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("sshd exited: %s", s.Log.String())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("sshd not listening on %s after 5s: %s", s.Addr, s.Log.String())
		}
		time.Sleep(20 * time.Millisecond) // polling for the child's listen
	}
}

// Stop kills sshd and the processes serving its sessions, and waits for
// it to exit.
func (s *Server) Stop() {
	s.KillSessions()
	s.cmd.Process.Kill()
	<-s.exited
}

// KnownHosts is the known_hosts line that pins the server's host key.
func (s *Server) KnownHosts() string { return KnownHostsLine(s.Addr, s.HostKey) }

// KillSessions SIGKILLs every descendant of the listening sshd: the
// processes serving the open connections, which the kernel then resets.
func (s *Server) KillSessions() int { return s.SignalSessions(syscall.SIGKILL) }

// SignalSessions sends sig to every descendant of the listening sshd.
// They are children of the test's own child, found by their parent ids.
func (s *Server) SignalSessions(sig syscall.Signal) int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				kids[ppid] = append(kids[ppid], pid)
			}
		}
	}
	n := 0
	var walk func(int)
	walk = func(p int) {
		for _, k := range kids[p] {
			walk(k)
			if syscall.Kill(k, sig) == nil {
				n++
			}
		}
	}
	walk(s.cmd.Process.Pid)
	return n
}

// NewKey is a fresh ed25519 key: its signer and its unencrypted PEM (the
// shape a broker-scoped Hub secret delivers).
func NewKey(t testing.TB) (ssh.Signer, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return s, pem.EncodeToMemory(blk)
}

// KnownHostsLine is "[host]:port key-type base64" for addr and k.
func KnownHostsLine(addr string, k ssh.PublicKey) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("[%s]:%s %s", host, port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))))
}

// FreePort is a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// User is the current user's name: the login sshd accepts.
func User(t testing.TB) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
