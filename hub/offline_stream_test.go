package hub_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/fake"
)

// TestExecAndAttachToFrozenBrokerEndOffline: an exec and an attach sent
// to a broker that freezes (socket open, nothing moving, as under SIGSTOP)
// before it answers their first item answer 503 runtime_broker_offline
// when the Hub marks the broker offline (interval+grace), not at the
// dispatch deadline, and name no internal address. After the thaw both
// work again.
func TestExecAndAttachToFrozenBrokerEndOffline(t *testing.T) {
	const deadline = 20 * time.Second // far beyond interval+grace+slack
	e := testenv.New(t, testenv.Options{HeartbeatInterval: testHeartbeat, Grace: testGrace, DispatchTimeout: deadline})
	ctx := context.Background()
	rt := fake.New()
	brokerID, fz := frozenBroker(t, e, "frosty", rt)
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Exec": func() error {
			_, err := e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"echo", "hi"}}, io.Discard, io.Discard)
			return err
		},
		"Attach": func() error {
			at, err := e.Admin.Attach(ctx, "w", "default")
			if err == nil {
				_ = at.Close()
			}
			return err
		},
	}
	limit := testHeartbeat + testGrace + offlineSlack
	for _, method := range []string{"Exec", "Attach"} {
		call := calls[method]
		// The runtime answers after the freeze: the call is cut off before
		// its stream has a first item.
		rt.SetLatency(method, 300*time.Millisecond)
		before := rt.Calls(method)
		done := make(chan error, 1)
		go func() { done <- call() }()
		wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
			if rt.Calls(method) == before {
				return errors.New("the broker has not received the call")
			}
			return nil
		})
		fz.freeze()
		frozenAt := time.Now()
		select {
		case err := <-done:
			d := time.Since(frozenAt)
			t.Logf("MEASURED: %s answered %v after the freeze (interval+grace %v)", method, d.Round(time.Millisecond), testHeartbeat+testGrace)
			if d > limit {
				t.Errorf("%s answered %v after the freeze, want within %v", method, d.Round(time.Millisecond), limit)
			}
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Status != 503 || ae.Code != api.CodeBrokerOffline {
				t.Fatalf("%s: got %v, want 503 %s", method, err, api.CodeBrokerOffline)
			}
			if strings.Contains(ae.Message, "127.0.0.1") {
				t.Errorf("%s: the error names an internal address: %s", method, ae.Message)
			}
		case <-time.After(deadline + 5*time.Second):
			t.Fatalf("%s still pending %v after the freeze", method, time.Since(frozenAt))
		}
		rt.SetLatency(method, 0)
		fz.thaw()
		e.WaitBrokerStatus(brokerID, api.BrokerOnline)
		if err := call(); err != nil {
			t.Fatalf("%s after the thaw: %v", method, err)
		}
	}
}
