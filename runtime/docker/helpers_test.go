package docker_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

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

// waitFor polls cond until it holds or 30s pass.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last: %s)", what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	waitFor(t, id+" to log "+text, func() (bool, string) {
		out = logsOf(ctx, rt, id)
		return strings.Contains(out, text), out
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
