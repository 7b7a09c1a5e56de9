package hub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

// steady gives the control channel the product's timing (a ping every
// 5 s, offline after 15 s of silence) instead of testenv's 800 ms window,
// which is there for the liveness tests. These tests are about capacity
// and an action's writes: on a loaded 2-core machine the whole test
// process stalls for most of a second at times (a 10 ms sleep woke up to
// 1.1 s late, measured), long enough for either end of the channel to
// find the other silent; a broker marked offline mid-test fails the
// commands in flight, and its reconnect rewrites its agents' records.
func steady(opts testenv.Options) testenv.Options {
	opts.HeartbeatInterval, opts.Grace = wire.DefaultHeartbeatInterval, wire.DefaultGrace
	return opts
}

// 200 concurrent starts against a broker limited to 50: exactly 50 run,
// 150 are refused with 429 quota_exceeded, and the reservations equal the
// running agents afterwards.
func TestConcurrentCreatesNeverOvershoot(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, steady(testenv.Options{Postgres: pg, Brokers: 1}))
		ctx := context.Background()
		b := e.Brokers()[0]
		fifty := 50
		if _, err := e.Admin.UpdateBroker(ctx, b.ID, api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &fifty}}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		var other []error
		sem := make(chan struct{}, 32)
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: fmt.Sprintf("c%03d", i), Project: "default", Start: true, Command: []string{"x"}})
				mu.Lock()
				defer mu.Unlock()
				var ae *api.Error
				switch {
				case err == nil:
					ok++
				case errors.As(err, &ae) && ae.Status == 429 && ae.Code == api.CodeQuotaExceeded:
					refused++
				default:
					other = append(other, err)
				}
			}()
		}
		wg.Wait()
		if len(other) > 0 {
			t.Fatalf("unexpected errors: %v", other[:min(3, len(other))])
		}
		if ok != 50 || refused != 150 {
			t.Fatalf("%d created, %d refused; want 50 and 150", ok, refused)
		}
		running, err := e.Admin.ListAgents(ctx, client.AgentFilter{Project: "default", Phase: api.PhaseRunning}, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		n, err := e.Store.CountReservations(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		inv, _ := b.Runtime.Inventory(ctx)
		if running.Total != 50 || n != 50 || len(inv) != 50 {
			t.Fatalf("running %d, reservations %d, containers %d; want 50 each", running.Total, n, len(inv))
		}
		all, _ := e.Admin.ListAgents(ctx, client.AgentFilter{Project: "default"}, "", 1000)
		if all.Total != 50 {
			t.Fatalf("%d agent records; refused creates must leave none", all.Total)
		}
	})
}

// The hub-wide limit applies when a broker has no maxAgents; a broker's
// own maxAgents may be lower than the hub default, and 0 is unlimited.
func TestLimitPrecedence(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	b := e.Brokers()[0]
	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 1}); err != nil {
		t.Fatal(err)
	}
	start := func(name string) error {
		_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Start: true, Command: []string{"x"}})
		return err
	}
	if err := start("a1"); err != nil {
		t.Fatal(err)
	}
	apiErr(t, start("a2"), 429, api.CodeQuotaExceeded)
	zero := 0
	if _, err := e.Admin.UpdateBroker(ctx, b.ID, api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &zero}}); err != nil {
		t.Fatal(err)
	}
	if err := start("a2"); err != nil {
		t.Fatalf("maxAgents 0 is unlimited: %v", err)
	}
	br, _ := e.Admin.GetBroker(ctx, b.ID)
	if br.EffectiveMaxAgents != 0 || br.RunningAgents != 2 {
		t.Fatalf("broker view %+v", br)
	}
	if _, err := e.Admin.UpdateBroker(ctx, b.ID, api.UpdateBrokerRequest{ClearMaxAgents: true}); err != nil {
		t.Fatal(err)
	}
	apiErr(t, start("a3"), 429, api.CodeQuotaExceeded) // back to the hub default of 1
	// A refused restart leaves the running container alone.
	if _, err := e.Admin.AgentAction(ctx, "a1", "default", "restart"); err != nil {
		t.Fatalf("restart of an agent that holds its slot: %v", err)
	}
}

// An action's writes are one transaction: a start or a restart by a user
// of an agent with no recorded delegator, refused by a full broker, writes
// nothing (the delegator stays unrecorded, the version where it was) and
// answers quota_exceeded; with room, the delegator and the slot are
// written together.
//
// The agent is created and never started, so that nothing but the test
// and the actions writes its record: an agent run and stopped has the
// broker's report of its exit still on its way after the stop is
// answered, and that report, applied whenever it lands (under load, after
// the test has read the record), rewrites the record and moves its
// version.
func TestActionOnFullBrokerWritesNothing(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, steady(testenv.Options{Postgres: pg, Brokers: 1}))
		ctx := context.Background()
		b := e.Brokers()[0]
		if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 1}); err != nil {
			t.Fatal(err)
		}
		create := func(name string, start bool) string {
			a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Start: start, Command: []string{"x"}})
			if err != nil {
				t.Fatal(err)
			}
			return a.ID
		}
		id := create("idle", false) // holds no slot
		create("holder", true)
		// No recorded provenance: a user running it again becomes its
		// delegator (authz.Redelegate).
		a, err := e.Store.GetAgent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		a.Delegator = ""
		if err := e.Store.UpdateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"start", "restart"} {
			_, err := e.Admin.AgentAction(ctx, "idle", "default", verb)
			apiErr(t, err, 429, api.CodeQuotaExceeded)
			got, err := e.Store.GetAgent(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Delegator != "" || got.Version != a.Version {
				t.Fatalf("refused %s wrote the agent: delegator %q version %d, want \"\" and %d", verb, got.Delegator, got.Version, a.Version)
			}
			if n, err := e.Store.CountReservations(ctx, b.ID); err != nil || n != 1 {
				t.Fatalf("refused %s: %d reservations (%v), want 1", verb, n, err)
			}
		}
		zero := 0
		if _, err := e.Admin.UpdateBroker(ctx, b.ID, api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &zero}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Admin.AgentAction(ctx, "idle", "default", "start"); err != nil {
			t.Fatal(err)
		}
		got, err := e.Store.GetAgent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		reserved, err := e.Store.ReservedAgents(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Delegator != "user:admin" || !slices.Contains(reserved, id) {
			t.Fatalf("start with room: delegator %q, reserved %v; want user:admin and the agent's slot", got.Delegator, reserved)
		}
	})
}
