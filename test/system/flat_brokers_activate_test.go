package system

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// TestRemoteFlatInstanceActivatesWhenTheExperimentIsTurnedOn: against a
// team Hub with hub.flat_runtime_brokers off, `runtime-broker register
// --instance K` says the instance is not activated, says how to turn the
// experiment on, and saves what the start needs; `runtime-broker start`
// then runs (it does not exit for want of credentials) and logs the
// instance as not activated; once an admin turns the experiment on, the
// same process activates it, without a restart, under the broker ID the
// registration printed, serving its runtime target.
func TestRemoteFlatInstanceActivatesWhenTheExperimentIsTurnedOn(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	requireDocker(t)
	requireDemoImage(t)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")

	bh := newHost(t, "flat")
	bh.useHub(t, hub.URL, token)
	writeInstances(t, bh, "", dockerInstance("late-docker"))
	stdout, stderr, rc, err := bh.scionCode(nil, "runtime-broker", "register", "--instance", "late-docker", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if rc != 0 || !strings.Contains(stderr, "not activated") || !strings.Contains(stderr, api.CodeExperimentDisabled) ||
		!strings.Contains(stderr, "--experiment "+api.ExperimentFlatRuntimeBrokers+"=on") {
		t.Fatalf("register --instance with the experiment off: exit %d, stderr %q; want it registered, not activated, saying how to turn the experiment on", rc, stderr)
	}
	var reg struct {
		instanceRegistration
		Activated    bool   `json:"activated"`
		NotActivated string `json:"notActivated"`
	}
	if err := json.Unmarshal([]byte(stdout), &reg); err != nil {
		t.Fatal(err)
	}
	if reg.BrokerID == "" || reg.Instance != "late-docker" || reg.Activated || !strings.Contains(reg.NotActivated, api.CodeExperimentDisabled) {
		t.Fatalf("register --instance -o json: %s; want a broker ID, activated false and why", stdout)
	}
	if m, err := admin.brokers(); err != nil || m["late-docker"].Status == api.BrokerOnline || m["late-docker"].RuntimeTarget != nil {
		t.Fatalf("the Hub lists %v (%v); want late-docker neither online nor serving a target", statusSummary(m), err)
	}

	proc := bh.start(t, "broker-flat", append([]string{"runtime-broker", "start"}, hbFlags...)...)
	wait.Eventually(t, 20*time.Second, pollInterval, func() error {
		if proc.Exited() {
			t.Fatalf("runtime-broker start exited (%v); want it waiting for the experiment", proc.ExitErr())
		}
		if l := proc.Logs(); !strings.Contains(l, "instance late-docker not activated") || !strings.Contains(l, api.CodeExperimentDisabled) {
			return fmt.Errorf("no 'instance late-docker not activated: %s' in the broker's log yet", api.CodeExperimentDisabled)
		}
		return nil
	})
	if m, err := admin.brokers(); err != nil || m["late-docker"].Status == api.BrokerOnline {
		t.Fatalf("late-docker online with the experiment off: %v (%v)", statusSummary(m), err)
	}

	enableFlatBrokers(t, admin, hub.URL, token)
	turnedOn := time.Now()
	// The broker asks again every 15-30 s after a refusal.
	var m map[string]api.RuntimeBroker
	wait.Eventually(t, 45*time.Second, pollInterval, func() error {
		if proc.Exited() {
			t.Fatalf("runtime-broker start exited (%v)", proc.ExitErr())
		}
		var err error
		if m, err = admin.brokers(); err != nil {
			return err
		}
		b := m["late-docker"]
		if b.Status != api.BrokerOnline || b.RuntimeTarget == nil || *b.RuntimeTarget != (api.RuntimeTarget{Type: api.RuntimeTargetDocker}) {
			return fmt.Errorf("late-docker: %+v", b)
		}
		return nil
	})
	t.Logf("activated %s after the experiment was turned on", time.Since(turnedOn).Round(100*time.Millisecond))
	if id := m["late-docker"].ID; id != reg.BrokerID {
		t.Fatalf("late-docker serves as %s, registered as %s", id, reg.BrokerID)
	}
	if !strings.Contains(proc.Logs(), "instance late-docker activated") {
		t.Fatalf("no 'instance late-docker activated' in the broker's log")
	}
}
