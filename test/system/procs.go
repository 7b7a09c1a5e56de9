package system

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is a long-running process started by a test (a Hub, a broker).
// Its stdout and stderr go to files so that they survive the process and
// can be printed when the test fails.
type Proc struct {
	Name   string
	PID    int
	Stdout string // path of the captured stdout
	Stderr string // path of the captured stderr

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	waitErr error
}

// StartProc starts bin with args and env in its own process group (so a
// signal meant for the test run never reaches it). Output goes to files
// under logDir named after name and a sequence number, so a restarted
// process keeps the earlier run's logs. The process is killed when the
// test ends, and its logs are printed if the test failed.
func StartProc(t testing.TB, logDir, name string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	base := uniqueLogBase(logDir, name)
	outF, err := os.Create(base + ".stdout")
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	errF, err := os.Create(base + ".stderr")
	if err != nil {
		outF.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = outF, errF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		outF.Close()
		errF.Close()
		t.Fatalf("start %s (%s %s): %v", name, bin, strings.Join(args, " "), err)
	}
	// The child holds its own copies of the descriptors.
	outF.Close()
	errF.Close()
	p := &Proc{Name: name, PID: cmd.Process.Pid, Stdout: outF.Name(), Stderr: errF.Name(), cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Logf("started %s (pid %d): scion %s", name, p.PID, strings.Join(args, " "))
	t.Cleanup(func() {
		p.kill(syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) was not reaped 10s after SIGKILL", name, p.PID)
		}
		if t.Failed() {
			p.DumpLogs(t)
			keepLogs(t, p)
		}
	})
	return p
}

// keepLogs copies a failed test's process logs whole under
// $SCION_TEST_KEEP_LOGS/<test>/ (the dump above is cut to its tail, and
// the test's directory is removed), for a debug-level run's full story.
func keepLogs(t testing.TB, p *Proc) {
	dir := os.Getenv("SCION_TEST_KEEP_LOGS")
	if dir == "" {
		return
	}
	dst := filepath.Join(dir, strings.NewReplacer("/", "_").Replace(t.Name()))
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Logf("keep logs: %v", err)
		return
	}
	for _, f := range []string{p.Stdout, p.Stderr} {
		b, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o600)
		}
		if err != nil {
			t.Logf("keep logs: %v", err)
		}
	}
}

// uniqueLogBase returns dir/name-N for the first N not yet used.
func uniqueLogBase(dir, name string) string {
	for i := 1; ; i++ {
		base := filepath.Join(dir, fmt.Sprintf("%s-%d", name, i))
		if _, err := os.Stat(base + ".stderr"); errors.Is(err, os.ErrNotExist) {
			return base
		}
	}
}

// kill signals the process itself, not its group: a SIGKILL must look like
// the process crashing, and only what the test started is signalled.
func (p *Proc) kill(sig syscall.Signal) {
	if !p.Exited() {
		_ = syscall.Kill(p.PID, sig)
	}
}

// Kill9 sends SIGKILL and waits until the process is reaped, so that its
// port and database are free for a restart.
func (p *Proc) Kill9(t testing.TB) {
	t.Helper()
	p.kill(syscall.SIGKILL)
	p.WaitExit(t, 10*time.Second)
}

// Signal sends sig (SIGSTOP, SIGCONT, SIGTERM) to the process.
func (p *Proc) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.PID, sig); err != nil {
		t.Fatalf("signal %v to %s (pid %d): %v", sig, p.Name, p.PID, err)
	}
}

// WaitExit waits up to timeout for the process to end.
func (p *Proc) WaitExit(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s (pid %d) still running %v after it was told to stop", p.Name, p.PID, timeout)
	}
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr is the process's exit error; valid once Exited.
func (p *Proc) ExitErr() error { return p.waitErr }

// Logs returns the captured output so far (stderr first: that is where
// slog writes).
func (p *Proc) Logs() string {
	errB, _ := os.ReadFile(p.Stderr)
	outB, _ := os.ReadFile(p.Stdout)
	return fmt.Sprintf("--- %s (pid %d) stderr ---\n%s--- %s stdout ---\n%s", p.Name, p.PID, errB, p.Name, outB)
}

// DumpLogs prints the captured output into the test log.
func (p *Proc) DumpLogs(t testing.TB) {
	t.Helper()
	t.Log("\n" + p.Logs())
}

// FreePort returns a loopback TCP port that was free a moment ago. There
// is a small window before the caller binds it; on a test machine that is
// acceptable. Failing to bind at all is a failure, never a skip.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot bind a loopback port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// processGone reports whether pid no longer runs: it does not exist, or
// it is a zombie that its (foreign) parent has not reaped yet.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// Format: pid (comm) state ...; comm may contain spaces or parens.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
