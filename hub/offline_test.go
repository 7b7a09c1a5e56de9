package hub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/fake"
)

// frozenBroker registers a broker that reaches the Hub through a freezer
// and starts it with rt; it returns once the broker is online.
func frozenBroker(t *testing.T, e *testenv.Env, name string, rt *fake.Runtime) (string, *freezer) {
	t.Helper()
	ctx := context.Background()
	creds, err := e.Hub.RegisterBroker(ctx, name, hub.BootstrapAdminID, false)
	if err != nil {
		t.Fatal(err)
	}
	e.NeverLogged(creds.Secret)
	if _, err := e.Admin.ProvideProject(ctx, creds.BrokerID, "default"); err != nil {
		t.Fatal(err)
	}
	fz := newFreezer(t, e.Server.Listener.Addr().String())
	b, err := broker.New(broker.Config{HubEndpoint: fz.URL(), BrokerID: creds.BrokerID, Name: name, Secret: []byte(creds.Secret),
		Runtime: rt, DataDir: t.TempDir(), Version: "test", HeartbeatInterval: testHeartbeat, Grace: testGrace,
		MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(bctx) }()
	t.Cleanup(func() { fz.thaw(); cancel(); <-done })
	e.WaitBrokerStatus(creds.BrokerID, api.BrokerOnline)
	return creds.BrokerID, fz
}

const (
	testHeartbeat = 200 * time.Millisecond
	testGrace     = 600 * time.Millisecond
	// offlineSlack is what detection may take beyond interval+grace: the
	// dead timer fires at the limit, then the Hub records the broker
	// offline (one write); generous for a loaded 2-core machine, and still
	// far below the dispatch deadline the old code waited for.
	offlineSlack = 3 * time.Second
)

// TestCallsToFrozenBrokerEndOffline: a broker freezes (socket open,
// nothing moving, as under SIGSTOP) while it runs a create. The create,
// and a logs call sent meanwhile, answer 503 runtime_broker_offline when
// the Hub marks the broker offline (interval+grace), not at the dispatch
// deadline. The create's outcome is unknown then, so the agent stays
// provisioning; when the broker is back, its inventory settles it: the
// container the broker did create runs, with its slot.
func TestCallsToFrozenBrokerEndOffline(t *testing.T) {
	const deadline = 20 * time.Second // far beyond interval+grace+slack
	e := testenv.New(t, testenv.Options{HeartbeatInterval: testHeartbeat, Grace: testGrace, DispatchTimeout: deadline})
	ctx := context.Background()
	rt := fake.New()
	rt.SetLatency("Create", 300*time.Millisecond) // the reply comes after the freeze
	brokerID, fz := frozenBroker(t, e, "frosty", rt)

	type result struct {
		err error
		at  time.Time
	}
	created := make(chan result, 1)
	go func() {
		_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}})
		created <- result{err, time.Now()}
	}()
	wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
		if rt.Calls("Create") == 0 {
			return errors.New("the broker has not received the create")
		}
		return nil
	})
	fz.freeze()
	frozenAt := time.Now()
	logs := make(chan result, 1)
	go func() {
		_, err := e.Admin.Logs(ctx, "w", "default", false, 0)
		logs <- result{err, time.Now()}
	}()

	limit := testHeartbeat + testGrace + offlineSlack
	for name, ch := range map[string]chan result{"create": created, "logs": logs} {
		select {
		case r := <-ch:
			d := r.at.Sub(frozenAt)
			t.Logf("MEASURED: %s answered %v after the freeze (interval+grace %v)", name, d.Round(time.Millisecond), testHeartbeat+testGrace)
			if d > limit {
				t.Errorf("%s answered %v after the freeze, want within %v", name, d.Round(time.Millisecond), limit)
			}
			var ae *api.Error
			if !errors.As(r.err, &ae) || ae.Status != 503 || ae.Code != api.CodeBrokerOffline {
				t.Fatalf("%s: got %v, want 503 %s", name, r.err, api.CodeBrokerOffline)
			}
			if strings.Contains(ae.Message, "127.0.0.1") {
				t.Errorf("%s: the error names an internal address: %s", name, ae.Message)
			}
		case <-time.After(deadline + 5*time.Second):
			t.Fatalf("%s still pending %v after the freeze", name, time.Since(frozenAt))
		}
	}
	b, err := e.Admin.GetBroker(ctx, brokerID)
	if err != nil || b.Status != api.BrokerOffline {
		t.Fatalf("broker %+v (%v), want offline", b, err)
	}
	a, err := e.Admin.GetAgent(ctx, "w", "default")
	if err != nil || a.Phase != api.PhaseProvisioning {
		t.Fatalf("agent after the cut-off create: %+v (%v), want phase provisioning (outcome unknown)", a, err)
	}

	fz.thaw()
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		a, err := e.Admin.GetAgent(ctx, "w", "default")
		if err != nil {
			return err
		}
		if a.Phase != api.PhaseRunning || a.StatusMessage != "" {
			return fmt.Errorf("agent phase %s (%q), want running with no status message left", a.Phase, a.StatusMessage)
		}
		return nil
	})
	if n := runningAgents(t, e, brokerID); n != 1 {
		t.Fatalf("%d slots, want 1", n)
	}
	if n := rt.Calls("Create"); n != 1 {
		t.Fatalf("runtime saw %d creates, want 1", n)
	}
}

// TestSettleAgentAsksTheBroker: a create cut off by its broker going
// offline, whose reconnect's inventory skipped the agent (the create was
// still unwinding), is settled by asking the broker on its new session:
// a container the broker has makes the agent run with its slot; none
// makes it error ("interrupted") with no slot. Either way the status
// saying it is unsettled is gone.
func TestSettleAgentAsksTheBroker(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	b := e.Brokers()[0]
	made, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "made", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	never, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "never", Project: "default", Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Runtime.Delete(ctx, never.ID); err != nil { // the broker never made it
		t.Fatal(err)
	}
	// Both as a cut-off create leaves them: provisioning, unsettled; the
	// first without the slot, as if the Hub had lost track of it.
	for _, id := range []string{made.ID, never.ID} {
		a, err := e.Store.GetAgent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		a.Phase, a.ContainerStatus, a.StatusMessage = api.PhaseProvisioning, "", hub.UnsettledMessage
		if err := e.Store.UpdateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := e.Store.Release(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{made.ID, never.ID} {
		if err := e.Hub.SettleAgent(ctx, id, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]struct{ phase, message string }{
		"made":  {api.PhaseRunning, ""},
		"never": {api.PhaseError, "create was interrupted before the runtime broker confirmed it"},
	} {
		a, err := e.Admin.GetAgent(ctx, name, "default")
		if err != nil || a.Phase != want.phase || a.StatusMessage != want.message {
			t.Errorf("%s settled as %+v (%v), want phase %s, message %q", name, a, err, want.phase, want.message)
		}
	}
	if n := runningAgents(t, e, b.ID); n != 1 {
		t.Fatalf("%d slots after settling, want 1 (the running one)", n)
	}
}
