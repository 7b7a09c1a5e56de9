package system

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// TestFrozenBrokerOfflineWithin10sPauseNever: with the default heartbeat
// timings (no flags), a Hub and a broker as separate processes:
//   - a broker stopped with SIGSTOP for 2 s (a GC pause, a laptop lid) is
//     never seen offline, polled every 50 ms through the pause and the
//     4 s after it, and the Hub logs no offline;
//   - a broker frozen with SIGSTOP is offline within 10 s.
func TestFrozenBrokerOfflineWithin10sPauseNever(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	hub := startTeamHub(t, newHost(t, "hub")) // default timings: no heartbeat flags
	token := hub.adminToken(t)
	b := &brokerHost{host: newHost(t, "frozen"), brokerName: "frozen"}
	b.useHub(t, hub.URL, token)
	b.mustScion(t, "runtime-broker", "register", "--name", "frozen")
	b.proc = b.start(t, "broker-frozen", "runtime-broker", "start", "--runtime", "fake")
	cl := client.New(hub.URL, token)
	waitBrokerOnline(t, cl, "frozen")
	status := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		bs, err := cl.ListAllBrokers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range bs {
			if x.Name == "frozen" {
				return x.Status
			}
		}
		return "missing"
	}

	// A 2 s pause: never offline.
	b.proc.Signal(t, syscall.SIGSTOP)
	paused := time.Now()
	resumed := false
	for time.Since(paused) < 6*time.Second {
		if !resumed && time.Since(paused) >= 2*time.Second {
			b.proc.Signal(t, syscall.SIGCONT)
			resumed = true
		}
		if s := status(); s != api.BrokerOnline {
			t.Fatalf("%v into a 2 s pause the broker is %s", time.Since(paused).Round(time.Millisecond), s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(hub.proc.Logs(), "broker offline") {
		t.Fatalf("the Hub marked the paused broker offline:\n%s", hub.proc.Logs())
	}

	// Frozen: offline within 10 s.
	b.proc.Signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(b.proc.PID, syscall.SIGCONT) })
	frozen := time.Now()
	for status() != api.BrokerOffline {
		if time.Since(frozen) > 10*time.Second {
			t.Fatalf("a frozen broker is still %s after 10 s", status())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("MEASURED: a frozen broker offline after %v (default heartbeat 2 s, grace 6 s)", time.Since(frozen).Round(10*time.Millisecond))
}
