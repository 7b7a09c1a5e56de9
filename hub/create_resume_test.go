package hub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// A keyed create (start: true) whose broker died after the runtime's
// create and before its start: the broker comes back reporting the
// container created. The retry with the same key finishes the create, and
// answers with the agent running; it used to answer 201 with an agent left
// created that nothing would ever start.
func TestKeyedCreateRetryFinishesAnUnfinishedStart(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	b := e.Brokers()[0]
	rt := b.Runtime
	rt.SetLatency("Start", 3*time.Second)
	ctx := client.WithIdempotencyKey(context.Background(), "k-unfinished")
	req := api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}
	first := make(chan error, 1)
	go func() {
		_, err := e.Admin.CreateAgent(ctx, req)
		first <- err
	}()
	// The runtime's create is done, its start is under way: the broker
	// "dies" (its runtime gone first, so it cannot undo anything).
	wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
		if rt.Calls("Start") == 0 {
			return errors.New("the create never reached the start")
		}
		return nil
	})
	rt.Close()
	e.StopBroker(b)
	if err := <-first; err == nil {
		t.Fatal("the first create succeeded although its broker died")
	}
	e.StartBroker(b, rt.Restart())
	a, err := e.Admin.CreateAgent(ctx, req)
	if err != nil {
		t.Fatalf("keyed retry: %v", err)
	}
	if a.Phase != api.PhaseRunning {
		t.Fatalf("keyed retry answered phase %s (%s), want running", a.Phase, a.StatusMessage)
	}
	st, err := b.Runtime.Inspect(context.Background(), a.ID)
	if err != nil || st.State != runtime.StateRunning {
		t.Fatalf("the runtime has %+v, %v; want it running", st, err)
	}
}
