package system

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Background tests. The package's long pole is TestBrokerKill9TrialsDocker
// (ten rounds of 100 creates, a kill -9 and 100 deletes on the Docker
// Engine: 6 minutes here). As a t.Parallel test it started once the
// sequential tests were done (the hostile ones, 3 minutes) and then only
// when a slot was free: a CI run saw it start at 239 s and end the
// package at 597 s. So it runs in a process of its own that TestMain
// starts at once (startBackground), and that begins its trials the
// moment the measuring tests end (quietDone), whatever the slots: the
// test itself, in this process, waits for that process and reports what
// it printed and how it ended (runsInBackground).
//
// Not sooner: beside the trials' engine work (container creates and
// teardowns, network namespaces, mounts) the hostile test's signed-in
// client saw p99s over 100 ms, priority or not; its measurement needs the
// machine quiet of this package's work. The child is started before the
// hostile test raises this process's priority, so its Hubs, brokers and
// CLIs run at go test's nice value, as every parallel test's do.

// quietTests are the sequential tests that measure the Hub and want no
// other test of this package beside them.
var quietTests = []string{"TestHubUnderHostileConnections", "TestSlowUploadsLockNobodyOut"}

// quiet counts the selected quietTests still to end (when quietCounted);
// quietDone counts each one's end.
var (
	quiet        sync.WaitGroup
	quietCounted bool
)

// quietDone is called by each quietTest when it starts: its end is
// counted when it ends, pass, fail or skip.
func quietDone(t *testing.T) {
	if quietCounted && selected(t.Name()) {
		t.Cleanup(quiet.Done)
	}
}

// backgroundTests are the tests run in a process of their own.
var backgroundTests = []string{"TestBrokerKill9TrialsDocker"}

// backgroundEnv names, in the child's environment, the one test it runs.
const backgroundEnv = "SCION_SYSTEM_BACKGROUND_TEST"

// bgRun is one background test's process.
type bgRun struct {
	out     bytes.Buffer
	done    chan struct{}
	err     error // how it exited
	started time.Time
}

var background = map[string]*bgRun{}

// startBackground starts every selected background test (-run, -skip)
// in its own process. The demo image is built first, here, so that the
// child never builds it (and so never removes it at its end while the
// other Docker tests use it). Nothing is started in a child itself, or
// when the engine or the image is not there: the test then runs here and
// skips or fails as its requirements say.
func startBackground() {
	if os.Getenv(backgroundEnv) != "" {
		return
	}
	for _, name := range quietTests {
		if selected(name) {
			quiet.Add(1)
		}
	}
	quietCounted = true
	if fl := flag.Lookup("test.list"); scionBin == "" || fl != nil && fl.Value.String() != "" {
		return
	}
	var gates []io.WriteCloser
	for _, name := range backgroundTests {
		if !selected(name) {
			continue
		}
		if err := ensureDemoImage(); err != nil {
			return
		}
		args := []string{"-test.run=^" + name + "$", "-test.v=true", "-test.count=1"}
		for _, f := range []string{"test.timeout", "test.short"} {
			if fl := flag.Lookup(f); fl != nil {
				args = append(args, "-"+f+"="+fl.Value.String())
			}
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), backgroundEnv+"="+name, "SCION_BIN="+scionBin)
		bg := &bgRun{done: make(chan struct{}), started: time.Now()}
		cmd.Stdout, cmd.Stderr = &bg.out, &bg.out
		// It dies with this process; a test binary that is killed leaves
		// its cleanups undone either way.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		gate, err := cmd.StdinPipe()
		if err != nil {
			continue
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "system tests: %s runs in process: cannot start its own: %v\n", name, err)
			continue
		}
		go func() { bg.err = cmd.Wait(); close(bg.done) }()
		background[name] = bg
		gates = append(gates, gate)
	}
	// Open the gates (a line on each child's stdin) once the measuring
	// tests have ended.
	go func() {
		quiet.Wait()
		for _, g := range gates {
			_, _ = io.WriteString(g, "go\n")
			_ = g.Close()
		}
	}()
}

// gateTimeout bounds a background child's wait for its gate: longer than
// the quiet tests take, shorter than the package's timeout.
const gateTimeout = 15 * time.Minute

// awaitGate waits, in a background child, for the parent's line on stdin.
func awaitGate(t *testing.T) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := os.Stdin.Read(b[:])
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the parent process closed the gate: %v", err)
		}
	case <-time.After(gateTimeout):
		t.Fatalf("no go from the parent process in %v", gateTimeout)
	}
}

// selected reports whether -test.run and -test.skip select the top-level
// test name (their first /-separated element, as go test reads them).
func selected(name string) bool {
	match := func(f string, empty bool) bool {
		fl := flag.Lookup(f)
		if fl == nil || fl.Value.String() == "" {
			return empty
		}
		top, _, _ := strings.Cut(fl.Value.String(), "/")
		ok, err := regexp.MatchString(top, name)
		return err == nil && ok
	}
	return match("test.run", true) && !match("test.skip", false)
}

// runsInBackground is true when t's body runs in another process, whose
// end it has then waited for and reported: its output as t's log, its
// failure or skip as t's. False in that process itself, and when none was
// started: t's body runs here.
func runsInBackground(t *testing.T) bool {
	t.Helper()
	if os.Getenv(backgroundEnv) == t.Name() {
		awaitGate(t)
		return false
	}
	bg := background[t.Name()]
	if bg == nil {
		return false
	}
	t.Parallel() // waiting takes no CPU; it holds a slot as the test did
	<-bg.done
	out := bg.out.String()
	t.Logf("ran in its own process from the package's start (%v):\n%s", time.Since(bg.started).Round(time.Second), out)
	switch {
	case bg.err != nil:
		t.Fatalf("its process failed: %v", bg.err)
	case strings.Contains(out, "--- SKIP: "+t.Name()):
		if inCI() { // a skip there can only be a missing real part, which CI must not hide
			t.Fatalf("skipped in its process under CI=true (see its log above)")
		}
		t.Skip("skipped in its process (see its log above)")
	case !strings.Contains(out, "--- PASS: "+t.Name()):
		t.Fatalf("its process ended without passing the test")
	}
	return true
}
