package docker_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// engineContainers lists the engine's containers of agentID, whatever
// their broker: what is really there, not what the runtime says.
func engineContainers(t testing.TB, agentID string) []container.Summary {
	t.Helper()
	cs, err := engine.ContainerList(context.Background(), container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", runtime.LabelAgentID+"="+agentID)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func logsOf(ctx context.Context, rt runtime.Runtime, id string) string {
	r, err := rt.Logs(ctx, id, false)
	if err != nil {
		return err.Error()
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

func waitLog(t testing.TB, ctx context.Context, rt runtime.Runtime, id, text string) string {
	t.Helper()
	var out string
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		out = logsOf(ctx, rt, id)
		if !strings.Contains(out, text) {
			return fmt.Errorf("%s logged %q, want %q", id, out, text)
		}
		return nil
	})
	return out
}

// waitExitEvent waits for an exited event about id.
func waitExitEvent(t testing.TB, events <-chan runtime.Event, id string) runtime.Status {
	t.Helper()
	return waitEvent(t, events, id, runtime.StateExited)
}

func waitEvent(t testing.TB, events <-chan runtime.Event, id, state string) runtime.Status {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Status.AgentID == id && ev.Status.State == state {
				return ev.Status
			}
		case <-timeout:
			t.Fatalf("no %s event for %s", state, id)
		}
	}
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
