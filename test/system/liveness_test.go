package system

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// Short heartbeats so that liveness is measured in seconds; the Hub and
// the brokers get the same values.
const (
	hbInterval = 500 * time.Millisecond
	hbGrace    = 1500 * time.Millisecond
	// offlineBudget is the longest a dead broker may still show online:
	// interval+grace (2 s) plus slack for a loaded 2-core machine.
	offlineBudget = 10 * time.Second
	// hubRestartBudget covers the brokers' reconnect backoff (capped at
	// 10 s) plus slack.
	hubRestartBudget = 15 * time.Second
)

var hbFlags = []string{"--heartbeat-interval", hbInterval.String(), "--heartbeat-grace", hbGrace.String()}

// brokerHost is a machine running `scion runtime-broker start`.
type brokerHost struct {
	*host
	brokerName string
	brokerID   string
	proc       *Proc
}

// registration is the part of `runtime-broker register -o json` we check.
type registration struct {
	BrokerID          string `json:"brokerId"`
	Name              string `json:"name"`
	HubEndpointSaved  bool   `json:"hubEndpointSaved"`
	BrokerHubEndpoint string `json:"brokerHubEndpoint"`
}

// setupBroker does on a fresh host what an operator does: add the Hub,
// register a broker (which saves credentials and
// server.broker.hub_endpoint), provide for project "default" and start the
// broker process.
func setupBroker(t *testing.T, hub *hubProc, token, name string) *brokerHost {
	t.Helper()
	b := &brokerHost{host: newHost(t, name), brokerName: name}
	b.useHub(t, hub.URL, token)
	var reg registration
	b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
	if reg.BrokerID == "" || reg.Name != name || !reg.HubEndpointSaved || reg.BrokerHubEndpoint != hub.URL {
		t.Fatalf("register %s: %+v; want a broker ID and server.broker.hub_endpoint saved as %s", name, reg, hub.URL)
	}
	b.brokerID = reg.BrokerID
	b.mustScion(t, "runtime-broker", "provide", "--project", "default")
	b.startBroker(t)
	return b
}

func (b *brokerHost) startBroker(t *testing.T) {
	t.Helper()
	b.proc = b.start(t, "broker-"+b.brokerName, append([]string{"runtime-broker", "start", "--runtime", "fake"}, hbFlags...)...)
}

// TestTwoBrokersLivenessAcrossKill: a broker killed with SIGKILL goes
// offline within the heartbeat budget while the other stays online; a
// restarted broker comes back under its old record; after the Hub itself
// is killed and restarted on the same database and port, both brokers
// reconnect on their own and no broker record is duplicated.
func TestTwoBrokersLivenessAcrossKill(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")

	b1 := setupBroker(t, hub, token, "b1")
	b2 := setupBroker(t, hub, token, "b2")
	bothOnline := map[string]string{"b1": api.BrokerOnline, "b2": api.BrokerOnline}
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(bothOnline) })
	ids := brokerIDs(t, admin)
	if ids["b1"] != b1.brokerID || ids["b2"] != b2.brokerID {
		t.Fatalf("broker IDs %v differ from the registered ones b1=%s b2=%s", ids, b1.brokerID, b2.brokerID)
	}

	// kill -9 broker 1: b2 must stay online at every poll meanwhile.
	b1.proc.Kill9(t)
	b1Offline := map[string]string{"b1": api.BrokerOffline, "b2": api.BrokerOnline}
	detect := wait.Eventually(t, offlineBudget, pollInterval, func() error {
		err := admin.brokerStatuses(b1Offline)
		if m, lerr := admin.brokers(); lerr == nil && m["b2"].Status != api.BrokerOnline {
			t.Fatalf("b2 went %s while only b1 was killed", m["b2"].Status)
		}
		return err
	})
	t.Logf("MEASURED: broker killed with SIGKILL shown offline after %v (interval+grace = %v)", detect.Round(time.Millisecond), hbInterval+hbGrace)
	// b2 keeps its channel over a whole heartbeat window after b1's death.
	wait.Consistently(t, hbInterval+hbGrace, pollInterval, func() error { return admin.brokerStatuses(b1Offline) })

	// Restart broker 1 from the same home: same record, back online.
	restart := time.Now()
	b1.startBroker(t)
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(bothOnline) })
	t.Logf("MEASURED: restarted broker online again %v after its process started", time.Since(restart).Round(time.Millisecond))
	assertSameBrokers(t, admin, ids)

	// kill -9 the Hub and start it again on the same database and port.
	killed := time.Now()
	hub.proc.Kill9(t)
	hub.restart(t)
	ready := time.Now()
	wait.Eventually(t, hubRestartBudget, pollInterval, func() error { return admin.brokerStatuses(bothOnline) })
	t.Logf("MEASURED: after the Hub's kill -9 and restart, both brokers online %v after the Hub was ready again (%v after the kill; Hub restart took %v)",
		time.Since(ready).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), ready.Sub(killed).Round(time.Millisecond))
	assertSameBrokers(t, admin, ids)
	assertBrokersRunning(t, b1, b2)

	// The brokers restart their backoff from 100 ms only after a session
	// that lasted 5 s (stableAfter in broker/connect.go); staying online
	// that long also shows that the reconnected channels do not flap.
	wait.Consistently(t, 5500*time.Millisecond, pollInterval, func() error { return admin.brokerStatuses(bothOnline) })

	// A long outage: keep the Hub down until both brokers have backed off
	// to their 10 s cap (8 failed attempts: ceilings 0.1, 0.2, ... 6.4,
	// then 10 s), so the reconnect after the restart is the worst case.
	before := map[*brokerHost]int{b1: b1.reconnectLines(), b2: b2.reconnectLines()}
	killed = time.Now()
	hub.proc.Kill9(t)
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		for b, n := range before {
			if got := b.reconnectLines() - n; got < 8 {
				return fmt.Errorf("broker %s has logged %d failed reconnects since the Hub died, waiting for 8", b.brokerName, got)
			}
		}
		return nil
	})
	down := time.Since(killed)
	hub.restart(t)
	ready = time.Now()
	wait.Eventually(t, hubRestartBudget, pollInterval, func() error { return admin.brokerStatuses(bothOnline) })
	t.Logf("MEASURED: after a %v Hub outage (brokers at their backoff cap), both brokers online %v after the Hub was ready again",
		down.Round(time.Millisecond), time.Since(ready).Round(time.Millisecond))
	assertSameBrokers(t, admin, ids)
	assertBrokersRunning(t, b1, b2)
}

// reconnectLines counts the broker's "reconnecting" log lines, one per
// failed connection attempt.
func (b *brokerHost) reconnectLines() int {
	data, _ := os.ReadFile(b.proc.Stderr)
	return strings.Count(string(data), "control channel down; reconnecting")
}

func assertBrokersRunning(t *testing.T, bs ...*brokerHost) {
	t.Helper()
	for _, b := range bs {
		if b.proc.Exited() {
			t.Errorf("broker %s exited while the Hub was down (%v); it should have kept reconnecting", b.brokerName, b.proc.ExitErr())
		}
	}
}

// TestFrozenBrokerMarkedOffline: a broker whose process is frozen
// (SIGSTOP) keeps its socket open, so only the heartbeat can tell; the
// Hub must mark it offline within interval+grace (plus slack), not after
// a minute, and take it back when it thaws.
func TestFrozenBrokerMarkedOffline(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	b := setupBroker(t, hub, token, "frozen")
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{"frozen": api.BrokerOnline}) })

	b.proc.Signal(t, syscall.SIGSTOP)
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			_ = syscall.Kill(b.proc.PID, syscall.SIGCONT)
		}
	})
	detect := wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"frozen": api.BrokerOffline})
	})
	t.Logf("MEASURED: frozen (SIGSTOP) broker shown offline after %v (interval+grace = %v)", detect.Round(time.Millisecond), hbInterval+hbGrace)
	if detect < hbInterval {
		t.Errorf("a frozen broker was marked offline after %v, before even one heartbeat interval (%v): the Hub is not waiting for the grace", detect, hbInterval)
	}

	b.proc.Signal(t, syscall.SIGCONT)
	thawed = true
	back := wait.Eventually(t, hubRestartBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"frozen": api.BrokerOnline})
	})
	t.Logf("MEASURED: thawed broker online again after %v", back.Round(time.Millisecond))
	if m, err := admin.brokers(); err != nil || m["frozen"].ID != b.brokerID {
		t.Errorf("after thawing, the broker record is %+v (err %v); want ID %s", m["frozen"], err, b.brokerID)
	}
}

func brokerIDs(t *testing.T, admin *host) map[string]string {
	t.Helper()
	m, err := admin.brokers()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for n, b := range m {
		ids[n] = b.ID
	}
	return ids
}

// assertSameBrokers checks that the Hub still has exactly the broker
// records it had (by name and ID): a reconnect never creates a new one.
func assertSameBrokers(t *testing.T, admin *host, want map[string]string) {
	t.Helper()
	got := brokerIDs(t, admin)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hub brokers: %v, want exactly %v (no new or duplicate record)", got, want)
	}
}
