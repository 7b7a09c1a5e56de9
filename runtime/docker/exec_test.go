package docker_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

func TestExecTTY(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	ctx := testCtx(t)
	spec := agentSpec(t, rt, "exectty", "serve", "m")
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code, err := rt.Exec(ctx, spec.AgentID, runtime.ExecRequest{
		Cmd: []string{agentPath, "exit", "4", "tty-out"}, TTY: true, Stdout: &out, Stderr: &errOut,
	})
	if err != nil || code != 4 {
		t.Fatalf("Exec = %d, %v", code, err)
	}
	// A terminal merges the streams and ends lines with \r\n.
	if out.String() != "tty-out\r\ntty-out (stderr)\r\n" || errOut.Len() != 0 {
		t.Errorf("TTY exec: stdout %q, stderr %q", out.String(), errOut.String())
	}
}

func TestTerminalAgent(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	ctx := testCtx(t)
	spec := agentSpec(t, rt, "ttyagent", "echo")
	spec.Labels[docker.LabelTTY] = "true"
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	a, err := rt.Attach(ctx, spec.AgentID)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !a.TTY() {
		t.Error("attachment to a terminal agent reports no TTY")
	}
	if err := a.Resize(ctx, runtime.TermSize{Rows: 40, Cols: 100}); err != nil {
		t.Errorf("Resize: %v", err)
	}
	var mu sync.Mutex
	var got bytes.Buffer
	go func() {
		b := make([]byte, 256)
		for {
			n, err := a.Read(b)
			mu.Lock()
			got.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if _, err := a.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(got.String(), "typed\r\n") {
			return fmt.Errorf("the terminal shows %q, want its echo of typed", got.String())
		}
		return nil
	})
	// The log is the terminal's output too, raw.
	waitLog(t, ctx, rt, spec.AgentID, "typed\r\n")
}
