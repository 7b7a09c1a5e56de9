package storetest

import (
	"slices"
	"testing"

	"github.com/scion-go/scion/store"
)

// A reservation is never moved between brokers (multi-broker spec,
// "Capacity of flat Runtime Brokers": "its reservation is never moved"):
// every write that takes a slot refuses an agent holding one on another
// broker with ErrReservationScope and writes nothing. Release, then
// Reserve, is the way to change brokers.

// reservedOn checks the agents holding a slot on each broker.
func reservedOn(t *testing.T, s store.Store, want map[string][]string) {
	t.Helper()
	for brokerID, ids := range want {
		got, err := s.ReservedAgents(t.Context(), brokerID)
		must(t, err)
		ids = slices.Clone(ids)
		slices.Sort(ids)
		if ids == nil {
			ids = []string{}
		}
		equal(t, got, ids)
	}
}

// testReserveScope: Reserve and UpdateAgentWith of an agent holding its
// slot elsewhere are refused, whatever the limit, and nothing moves; a
// create replacing an agent frees the old agent's slot and takes the new
// agent's own (no slot moves: the new agent is another agent).
func testReserveScope(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b1, b2 := newBroker(t, s, "b1"), newBroker(t, s, "b2")
	a, other := newAgent(t, s, p.ID, "a", b1.ID), newAgent(t, s, p.ID, "other", b2.ID)
	must(t, s.Reserve(ctx, b1.ID, a.ID, 0))
	must(t, s.Reserve(ctx, b2.ID, other.ID, 0))
	before := map[string][]string{b1.ID: {a.ID}, b2.ID: {other.ID}}

	for _, limit := range []int{0, 1, 5} {
		wantErr(t, s.Reserve(ctx, b2.ID, a.ID, limit), store.ErrReservationScope)
		reservedOn(t, s, before)
	}
	must(t, s.Reserve(ctx, b1.ID, a.ID, 1)) // its own slot: still idempotent

	// UpdateAgentWith: neither the agent (Version, broker, fields) nor the
	// slot written; the argument untouched.
	cur, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	for _, limit := range []int{0, 5} {
		c := *cur
		c.BrokerID, c.StatusMessage = b2.ID, "moving"
		wantErr(t, s.UpdateAgentWith(ctx, &c, store.UpdateAgentOptions{ReserveLimit: &limit}), store.ErrReservationScope)
		if c.Version != cur.Version {
			t.Fatalf("refused update moved the argument's version to %d", c.Version)
		}
		got, err := s.GetAgent(ctx, a.ID)
		must(t, err)
		equal(t, got, cur)
		reservedOn(t, s, before)
	}

	// Release, then Reserve: the agent changes brokers.
	must(t, s.Release(ctx, a.ID))
	must(t, s.Reserve(ctx, b2.ID, a.ID, 2))
	reservedOn(t, s, map[string][]string{b1.ID: nil, b2.ID: {a.ID, other.ID}})

	// Replacing other (slot on b2) with an agent on b1: the old slot goes
	// with the old agent, the new agent takes its own.
	repl := &store.Agent{Slug: "other", ProjectID: p.ID, BrokerID: b1.ID}
	_, err = s.CreateAgentWith(ctx, repl, store.CreateAgentOptions{Replace: other, ReserveLimit: new(1)})
	must(t, err)
	reservedOn(t, s, map[string][]string{b1.ID: {repl.ID}, b2.ID: {a.ID}})
}

// testReserveScopeRace: 200 agents race for the slots of two brokers
// (limits 10 and 20), each agent on one; exactly the limits are held.
// Then every holder races for a slot on the other broker, at the limits
// and unlimited: all are refused ErrReservationScope and nothing moves.
// Last, fresh agents each race for both brokers at once: each ends up
// holding exactly one slot, the other Reserve refused.
func testReserveScopeRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	brokers := []*store.Broker{newBroker(t, s, "b1"), newBroker(t, s, "b2")}
	limits := []int{10, 20}
	agents := make([]*store.Agent, 200)
	for i := range agents {
		agents[i] = newAgent(t, s, p.ID, slug(i), brokers[i%2].ID)
	}
	won := race(t, len(agents), store.ErrQuota, func(i int) error {
		return s.Reserve(ctx, brokers[i%2].ID, agents[i].ID, limits[i%2])
	})
	if won != 30 {
		t.Fatalf("%d reservations succeeded, want exactly 30", won)
	}
	held := map[string][]string{}
	var holders []int // index of broker held, per holder
	var holderAgents []string
	for j, b := range brokers {
		ids, err := s.ReservedAgents(ctx, b.ID)
		must(t, err)
		if len(ids) != limits[j] {
			t.Fatalf("broker %s holds %d slots, want %d", b.Name, len(ids), limits[j])
		}
		held[b.ID] = ids
		for _, id := range ids {
			holders, holderAgents = append(holders, j), append(holderAgents, id)
		}
	}

	for _, unlimited := range []bool{false, true} {
		won = race(t, len(holderAgents), store.ErrReservationScope, func(i int) error {
			other := 1 - holders[i]
			limit := limits[other]
			if unlimited {
				limit = 0
			}
			return s.Reserve(ctx, brokers[other].ID, holderAgents[i], limit)
		})
		if won != 0 {
			t.Fatalf("unlimited %v: %d reservations moved to the other broker, want none", unlimited, won)
		}
		reservedOn(t, s, held)
	}

	// The same fresh agent on both brokers at once, unlimited.
	fresh := make([]*store.Agent, 50)
	for i := range fresh {
		fresh[i] = newAgent(t, s, p.ID, slug(1000+i), brokers[0].ID)
	}
	won = race(t, 2*len(fresh), store.ErrReservationScope, func(i int) error {
		return s.Reserve(ctx, brokers[i%2].ID, fresh[i/2].ID, 0)
	})
	if won != len(fresh) {
		t.Fatalf("%d reservations succeeded for %d agents each racing on two brokers, want one each", won, len(fresh))
	}
	counts := map[string]int{}
	for _, b := range brokers {
		ids, err := s.ReservedAgents(ctx, b.ID)
		must(t, err)
		for _, id := range ids {
			counts[id]++
		}
	}
	for _, a := range fresh {
		if counts[a.ID] != 1 {
			t.Fatalf("agent %s holds %d slots, want 1", a.Slug, counts[a.ID])
		}
	}
}
