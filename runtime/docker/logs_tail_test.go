package docker_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// LogsTail has the engine cut the log to its last N lines.
func TestLogsTail(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	ctx := testCtx(t)
	spec := agentSpec(t, rt, "tail", "exit", "0", "said")
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		st, err := rt.Inspect(ctx, spec.AgentID)
		if err != nil {
			return err
		}
		if st.State != runtime.StateExited {
			return fmt.Errorf("the agent is %s, want exited", st.State)
		}
		return nil
	})
	read := func(tail int) string {
		r, err := rt.LogsTail(ctx, spec.AgentID, false, tail)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return string(b)
	}
	all := read(0)
	if strings.Count(all, "\n") != 2 {
		t.Fatalf("whole log = %q, want two lines", all)
	}
	if got := read(1); strings.Count(got, "\n") != 1 || !strings.HasSuffix(all, got) {
		t.Errorf("tail 1 = %q, want the last line of %q", got, all)
	}
	if got := read(5); got != all {
		t.Errorf("tail 5 = %q, want %q", got, all)
	}
}
