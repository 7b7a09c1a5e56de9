package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
)

func TestParseDetachKeys(t *testing.T) {
	for in, want := range map[string]string{
		"ctrl-p,ctrl-q": "\x10\x11", "ctrl-],q": "\x1dq", "CTRL-A": "\x01", "x": "x", "ctrl-@": "\x00",
	} {
		got, err := parseDetachKeys(in)
		if err != nil || string(got) != want {
			t.Errorf("parseDetachKeys(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ctrl-1", "ctrl-pp", "alt-x", "ctrl-p,,ctrl-q"} {
		if _, err := parseDetachKeys(bad); err == nil {
			t.Errorf("parseDetachKeys(%q) accepted", bad)
		}
	}
}

// The detach sequence is held back and detaches; a broken one is sent as
// typed; Ctrl-C passes.
func TestDetachReader(t *testing.T) {
	for _, tc := range []struct {
		in, sent string
		detached bool
	}{
		{"ab\x03c", "ab\x03c", false},
		{"ab\x10\x11cd", "ab", true},
		{"\x10x\x10\x10\x11", "\x10x\x10", true},
		{"a\x10", "a\x10", false}, // input ended mid-sequence: sent
	} {
		d := &detachReader{r: strings.NewReader(tc.in), keys: []byte{0x10, 0x11}}
		var got bytes.Buffer
		_, err := io.Copy(&got, d)
		if got.String() != tc.sent || (err == errDetached) != tc.detached {
			t.Errorf("%q: sent %q (err %v), want %q detached %v", tc.in, got.String(), err, tc.sent, tc.detached)
		}
	}
}

// syncBuf collects what the terminal shows.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestAttachOnAPseudoTerminal: scion attach on a real PTY puts it in raw
// mode, sends the window's size, passes Ctrl-C to the agent (the fake
// agent echoes its input and keeps it in its log), and detaches on
// Ctrl-P Ctrl-Q, leaving the agent running.
func TestAttachOnAPseudoTerminal(t *testing.T) {
	setHome(t)
	e := agentHub(t)
	ctx := context.Background()
	mustRun(t, "start", "tty", "--broker", "vm", "--", "x")
	ag, err := e.Admin.GetAgent(ctx, "tty", "default")
	if err != nil {
		t.Fatal(err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 31, Cols: 101}); err != nil {
		t.Fatal(err)
	}
	var screen syncBuf
	go func() { _, _ = io.Copy(&screen, ptmx) }()

	root := NewRoot(Daemons{})
	root.SetArgs([]string{"attach", "tty"})
	root.SetIn(tty)
	root.SetOut(tty)
	root.SetErr(tty)
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), root) }()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("%s; the terminal shows %q", what, screen.String())
	}
	waitFor("no attach banner", func() bool { return strings.Contains(screen.String(), "CTRL-P CTRL-Q detaches") })
	size := func() runtime.TermSize {
		for _, b := range e.Brokers() {
			if b.ID == ag.BrokerID {
				return b.Runtime.TermSize(ag.ID)
			}
		}
		return runtime.TermSize{}
	}
	waitFor("the size not sent", func() bool { return size() == runtime.TermSize{Rows: 31, Cols: 101} })

	// Ctrl-C goes to the agent: echoed back, in its log, still attached.
	if _, err := ptmx.Write([]byte("hello\x03")); err != nil {
		t.Fatal(err)
	}
	waitFor("the agent's echo", func() bool { return strings.Contains(screen.String(), "hello\x03") })
	select {
	case code := <-done:
		t.Fatalf("Ctrl-C ended the attach (exit %d)", code)
	case <-time.After(300 * time.Millisecond):
	}
	// The resize follows the window.
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	_ = tty.Sync()
	if p, _ := os.FindProcess(os.Getpid()); p != nil {
		_ = p.Signal(sigwinch)
	}
	waitFor("the new size not sent", func() bool { return size() == runtime.TermSize{Rows: 40, Cols: 120} })

	// Ctrl-P Ctrl-Q detaches.
	if _, err := ptmx.Write([]byte{0x10, 0x11}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("detach: exit %d; terminal %q", code, screen.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Ctrl-P Ctrl-Q did not detach; terminal %q", screen.String())
	}
	waitFor("no detach message", func() bool { return strings.Contains(screen.String(), "detached from tty") })
	if strings.Contains(screen.String(), "\x10\x11") {
		t.Error("the detach keys reached the agent")
	}
	if a, err := e.Admin.GetAgent(ctx, "tty", "default"); err != nil || a.Phase != api.PhaseRunning {
		t.Fatalf("after detaching the agent is %v (%v), want running", a, err)
	}
}
