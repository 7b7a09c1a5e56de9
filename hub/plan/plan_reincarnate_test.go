package plan

import (
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func TestReincarnateInPlace(t *testing.T) {
	now := time.Unix(1700000000, 0).UTC()
	agent := func() *store.Agent {
		return &store.Agent{ID: "a1", Slug: "w", BrokerID: "b1", RunID: "r1", Generation: 1, Image: "img:1", Role: "worker",
			Delegator: "user:u1", Phase: api.PhaseRunning, ContainerStatus: api.ContainerRunning,
			Generations: []api.Generation{{Number: 1, BrokerID: "b1", RunID: "r1"}}}
	}
	b := &store.Broker{ID: "b1", Name: "one"}
	for _, c := range []struct {
		name string
		in   InPlaceInput
		code string
	}{
		{"a move runs", InPlaceInput{Agent: agent(), Broker: b, Online: true, Moving: true}, api.CodeConflict},
		{"no broker", InPlaceInput{Agent: agent(), Online: true}, api.CodeBrokerMissing},
		{"broker offline", InPlaceInput{Agent: agent(), Broker: b}, api.CodeBrokerOffline},
	} {
		if _, err := ReincarnateInPlace(c.in); !api.IsCode(err, c.code) {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	a := agent()
	next, err := ReincarnateInPlace(InPlaceInput{Agent: a, Broker: b, Online: true, Image: "img:2", Role: "coordinator",
		Delegator: "user:u2", RunID: "r2", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if next.RunID != "r2" || next.Generation != 2 || next.Image != "img:2" || next.Role != "coordinator" || next.Delegator != "user:u2" ||
		next.Phase != api.PhaseProvisioning || next.ContainerStatus != "" || next.BrokerID != "b1" {
		t.Errorf("next generation %+v", next)
	}
	if g := next.Generations; len(g) != 2 || g[1] != (api.Generation{Number: 2, BrokerID: "b1", RunID: "r2", StartedAt: now, Reason: "reincarnated"}) {
		t.Errorf("generation chain %+v", g)
	}
	if len(a.Generations) != 1 || a.RunID != "r1" {
		t.Errorf("the input agent was changed: %+v", a)
	}
	next, _ = ReincarnateInPlace(InPlaceInput{Agent: agent(), Broker: b, Online: true, RunID: "r2", Now: now})
	if next.Image != "img:1" || next.Role != "worker" || next.Delegator != "user:u1" {
		t.Errorf("without a patch the configuration changed: %+v", next)
	}
}
