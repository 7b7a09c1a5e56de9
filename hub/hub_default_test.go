package hub_test

import (
	"context"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// The Hub's default_runtime_broker holds the broker's ID, not the name it
// was set with, and one that names no broker any more is no default. A
// Hub killed between a deregistration and its clearing the setting (or a
// PUT of the settings racing the deregistration) leaves the setting
// naming a deleted broker: a broker registered later under the same name
// must not become the default by it.
func TestHubDefaultIsTheBrokerNotItsName(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg, Brokers: 2})
		ctx := context.Background()
		b1 := e.Brokers()[0]
		st, err := e.Admin.PutSettings(ctx, api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultRuntimeBroker: "b1"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.AgentDefaults.DefaultRuntimeBroker; got != b1.ID {
			t.Fatalf("PUT settings answered default_runtime_broker %q, want b1's ID %s", got, b1.ID)
		}
		if st, err := e.Admin.GetSettings(ctx); err != nil || st.AgentDefaults.DefaultRuntimeBroker != b1.ID {
			t.Fatalf("GET settings: %+v %v, want b1's ID", st, err)
		}

		// The deregistration's transaction commits, the Hub's own clearing
		// of its setting never runs (a kill -9 in between).
		e.StopBroker(b1)
		if err := e.Store.DeleteBroker(ctx, b1.ID, false); err != nil {
			t.Fatal(err)
		}
		nb := e.AddBroker("b1") // the same name, a new broker
		if _, err := e.Admin.ProvideProject(ctx, nb.ID, "default"); err != nil {
			t.Fatal(err)
		}
		check := func(when string) {
			t.Helper()
			if st, err := e.Admin.GetSettings(ctx); err != nil || st.AgentDefaults.DefaultRuntimeBroker != "" {
				t.Fatalf("%s: GET settings %+v %v, want no default_runtime_broker (its broker is gone)", when, st, err)
			}
			// Two online providers and no default: the caller must choose.
			a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Command: []string{"x"}})
			if err == nil {
				t.Fatalf("%s: create without --broker placed the agent on broker %s, want a choice between b1 and b2", when, a.BrokerID)
			}
			apiErr(t, err, 409, api.CodeMultipleBrokers)
		}
		check("before a Hub restart")
		e.RestartHub()
		e.WaitBrokerStatus(nb.ID, api.BrokerOnline)
		e.WaitBrokerStatus(e.Brokers()[1].ID, api.BrokerOnline)
		check("after a Hub restart")

		// A default stored by name by an older Hub is pinned to its
		// broker's ID at start.
		if err := e.Store.PutSetting(ctx, "hub_settings", []byte(`{"agent_defaults":{"default_runtime_broker":"b2"}}`)); err != nil {
			t.Fatal(err)
		}
		e.RestartHub()
		b2 := e.Brokers()[1]
		if st, err := e.Admin.GetSettings(ctx); err != nil || st.AgentDefaults.DefaultRuntimeBroker != b2.ID {
			t.Fatalf("a default stored by name: GET settings %+v %v, want b2's ID %s", st, err, b2.ID)
		}
		raw, err := e.Store.GetSetting(ctx, "hub_settings")
		if err != nil || string(raw) == `{"agent_defaults":{"default_runtime_broker":"b2"}}` {
			t.Fatalf("the stored setting still names b2 by name: %s %v", raw, err)
		}
	})
}
