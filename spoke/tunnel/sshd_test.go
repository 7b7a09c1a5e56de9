package tunnel

import (
	"bytes"
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

// sshd is Debian's openssh-server run by the test on a loopback port, with
// its own host key and authorized_keys in a temp dir.
type sshd struct {
	addr   string
	hostPK ssh.PublicKey
	cmd    *exec.Cmd
	log    *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// needSSHD finds sshd, or skips t (fails it under CI=true, where a missing
// real part must not pass unnoticed; .ci/run installs openssh-server).
func needSSHD(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr == nil {
			path, err = "/usr/sbin/sshd", nil
		}
	}
	if err == nil && testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("sshd: skipped with -short")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: no sshd (apt-get install openssh-server): %v", err)
		}
		t.Skipf("no sshd (apt-get install openssh-server; CI=true makes this fail): %v", err)
	}
	abs, err := filepath.Abs(path) // sshd re-executes itself and insists on an absolute path
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// startSSHD runs `sshd -D -e -f <config>` as a child of the test, as the
// current user, accepting client for public-key login and TCP forwarding.
func startSSHD(t testing.TB, client ssh.PublicKey) *sshd {
	t.Helper()
	bin := needSSHD(t)
	dir := t.TempDir()
	host, hostPEM := newKey(t)
	hostKey := filepath.Join(dir, "host_ed25519")
	auth := filepath.Join(dir, "authorized_keys")
	write := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(hostKey, hostPEM)
	write(auth, ssh.MarshalAuthorizedKey(client))
	if os.Geteuid() == 0 {
		// Debian's sshd refuses to start without its privilege separation
		// directory, which only the system service would create.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	conf := filepath.Join(dir, "sshd_config")
	write(conf, []byte(strings.Join([]string{
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
	}, "\n")))
	s := &sshd{addr: fmt.Sprintf("127.0.0.1:%d", port), hostPK: host.PublicKey(), log: &lockedBuffer{}}
	s.cmd = exec.Command(bin, "-D", "-e", "-f", conf)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		s.killSessions()
		s.cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("sshd log:\n%s", s.log.String())
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case <-exited:
			t.Fatalf("sshd exited: %s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd not listening on %s after 5s: %s", s.addr, s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// killSessions SIGKILLs every descendant of the listening sshd: the
// processes serving the open connections, which the kernel then resets.
func (s *sshd) killSessions() int { return s.signalSessions(syscall.SIGKILL) }

// signalSessions sends sig to every descendant of the listening sshd.
// They are children of the test's own child, found by their parent ids.
func (s *sshd) signalSessions(sig syscall.Signal) int {
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

func currentUser(t testing.TB) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
