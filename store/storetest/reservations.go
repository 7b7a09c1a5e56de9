package storetest

import (
	"testing"

	"github.com/scion-go/scion/store"
)

func testReservations(t *testing.T, s store.Store) {
	ctx := t.Context()
	counts, err := s.ReservationCounts(ctx)
	must(t, err)
	equal(t, counts, map[string]int{})

	p := newProject(t, s, "p")
	b, b2 := newBroker(t, s, "b"), newBroker(t, s, "b2")
	var a [5]*store.Agent
	for i := range a {
		a[i] = newAgent(t, s, p.ID, slug(i), b.ID)
	}
	count := func(brokerID string, want int) {
		t.Helper()
		n, err := s.CountReservations(ctx, brokerID)
		must(t, err)
		if n != want {
			t.Fatalf("CountReservations(%s) = %d, want %d", brokerID, n, want)
		}
	}

	must(t, s.Reserve(ctx, b.ID, a[0].ID, 2))
	must(t, s.Reserve(ctx, b.ID, a[0].ID, 2)) // idempotent
	count(b.ID, 1)
	must(t, s.Reserve(ctx, b.ID, a[1].ID, 2))
	count(b.ID, 2)
	wantErr(t, s.Reserve(ctx, b.ID, a[2].ID, 2), store.ErrQuota)
	count(b.ID, 2)
	// Still idempotent at the limit: a holder is not refused its own slot.
	must(t, s.Reserve(ctx, b.ID, a[1].ID, 2))
	must(t, s.Reserve(ctx, b.ID, a[1].ID, 1))
	// 0 is unlimited.
	must(t, s.Reserve(ctx, b.ID, a[2].ID, 0))
	count(b.ID, 3)

	must(t, s.Release(ctx, a[2].ID))
	must(t, s.Release(ctx, a[2].ID)) // not holding: fine
	must(t, s.Release(ctx, "no-such-agent"))
	count(b.ID, 2)

	must(t, s.Reserve(ctx, b2.ID, a[3].ID, 1))
	counts, err = s.ReservationCounts(ctx)
	must(t, err)
	equal(t, counts, map[string]int{b.ID: 2, b2.ID: 1})

	// A slot held elsewhere is never moved (spec: "its reservation is
	// never moved"), under the limit or not; Release, then Reserve,
	// changes brokers, subject to the new broker's limit.
	wantErr(t, s.Reserve(ctx, b2.ID, a[0].ID, 1), store.ErrReservationScope)
	wantErr(t, s.Reserve(ctx, b2.ID, a[0].ID, 2), store.ErrReservationScope)
	count(b.ID, 2)
	count(b2.ID, 1)
	must(t, s.Release(ctx, a[0].ID))
	wantErr(t, s.Reserve(ctx, b2.ID, a[0].ID, 1), store.ErrQuota)
	must(t, s.Reserve(ctx, b2.ID, a[0].ID, 2))
	count(b.ID, 1)
	count(b2.ID, 2)
	// A broker that does not exist is that, even for an agent holding a
	// slot elsewhere.
	wantErr(t, s.Reserve(ctx, "missing", a[0].ID, 0), store.ErrNotFound)

	wantErr(t, s.Reserve(ctx, "missing", a[4].ID, 0), store.ErrNotFound)
	wantErr(t, s.Reserve(ctx, b.ID, "missing", 0), store.ErrNotFound)
	count("missing", 0)
}

func testCreateAgentReserve(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	one, zero := 1, 0

	a1 := &store.Agent{Slug: "a1", ProjectID: p.ID, BrokerID: b.ID}
	must(t, s.CreateAgent(ctx, a1, &one))
	counts, err := s.ReservationCounts(ctx)
	must(t, err)
	equal(t, counts, map[string]int{b.ID: 1})

	// Full: nothing is inserted and the argument is untouched.
	a2 := &store.Agent{Slug: "a2", ProjectID: p.ID, BrokerID: b.ID}
	wantErr(t, s.CreateAgent(ctx, a2, &one), store.ErrQuota)
	if a2.ID != "" {
		t.Fatalf("failed create set ID %q", a2.ID)
	}
	_, err = s.GetAgentBySlug(ctx, p.ID, "a2")
	wantErr(t, err, store.ErrNotFound)
	_, _, total, err := s.ListAgents(ctx, store.AgentFilter{}, store.Page{})
	must(t, err)
	if total != 1 {
		t.Fatalf("%d agents after a refused create, want 1", total)
	}

	// A duplicate slug is reported as such, not as a quota failure.
	wantErr(t, s.CreateAgent(ctx, &store.Agent{Slug: "a1", ProjectID: p.ID, BrokerID: b.ID}, &one), store.ErrAlreadyExists)

	must(t, s.CreateAgent(ctx, a2, &zero)) // unlimited
	must(t, s.CreateAgent(ctx, &store.Agent{Slug: "a3", ProjectID: p.ID, BrokerID: b.ID}, nil))
	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	if n != 2 {
		t.Fatalf("CountReservations = %d, want 2 (nil limit must not reserve)", n)
	}

	// The broker must exist when reserving.
	wantErr(t, s.CreateAgent(ctx, &store.Agent{Slug: "a4", ProjectID: p.ID, BrokerID: "missing"}, &zero), store.ErrNotFound)
	_, err = s.GetAgentBySlug(ctx, p.ID, "a4")
	wantErr(t, err, store.ErrNotFound)
	// The reservation belongs to the agent: deleting the agent frees it.
	must(t, s.DeleteAgent(ctx, a1.ID))
	must(t, s.CreateAgent(ctx, &store.Agent{Slug: "a5", ProjectID: p.ID, BrokerID: b.ID}, new(3)))
	n, err = s.CountReservations(ctx, b.ID)
	must(t, err)
	if n != 2 {
		t.Fatalf("CountReservations = %d, want 2", n)
	}
}

// testUpdateAgentReserve: UpdateAgentWith writes the agent and its slot
// together, or neither.
func testUpdateAgentReserve(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b, b2 := newBroker(t, s, "b"), newBroker(t, s, "b2")
	holder, a, other := newAgent(t, s, p.ID, "holder", b.ID), newAgent(t, s, p.ID, "a", b.ID), newAgent(t, s, p.ID, "other", b2.ID)
	one := 1
	must(t, s.Reserve(ctx, b.ID, holder.ID, 1))
	reserved := func(want map[string]int) {
		t.Helper()
		counts, err := s.ReservationCounts(ctx)
		must(t, err)
		equal(t, counts, want)
	}
	stored := func(id, delegator string, version int64) {
		t.Helper()
		got, err := s.GetAgent(ctx, id)
		must(t, err)
		if got.Delegator != delegator || got.Version != version {
			t.Fatalf("stored agent %s: delegator %q version %d, want %q and %d", id, got.Delegator, got.Version, delegator, version)
		}
	}

	// A full broker: ErrQuota, and neither the agent nor the slot written;
	// the argument is untouched.
	c := *a
	c.Delegator = "user-1"
	wantErr(t, s.UpdateAgentWith(ctx, &c, store.UpdateAgentOptions{ReserveLimit: &one}), store.ErrQuota)
	if c.Version != a.Version {
		t.Fatalf("refused update moved the argument's version to %d", c.Version)
	}
	stored(a.ID, "", a.Version)
	reserved(map[string]int{b.ID: 1})

	// Under the limit: both written, the argument as stored.
	must(t, s.UpdateAgentWith(ctx, &c, store.UpdateAgentOptions{ReserveLimit: new(2)}))
	if c.Version != a.Version+1 {
		t.Fatalf("version %d after the update, want %d", c.Version, a.Version+1)
	}
	stored(a.ID, "user-1", c.Version)
	reserved(map[string]int{b.ID: 2})

	// Idempotent for the slot's holder, even at the limit.
	c.Delegator = "user-2"
	must(t, s.UpdateAgentWith(ctx, &c, store.UpdateAgentOptions{ReserveLimit: &one}))
	stored(a.ID, "user-2", c.Version)
	reserved(map[string]int{b.ID: 2})

	// A stale version: ErrConflict, and neither written.
	stale := *other
	stale.Delegator = "user-3"
	fresh := *other
	must(t, s.UpdateAgent(ctx, &fresh))
	wantErr(t, s.UpdateAgentWith(ctx, &stale, store.UpdateAgentOptions{ReserveLimit: new(0)}), store.ErrConflict)
	stored(other.ID, "", fresh.Version)
	reserved(map[string]int{b.ID: 2})

	// A deleted agent: ErrNotFound.
	gone := fresh
	must(t, s.DeleteAgent(ctx, other.ID))
	wantErr(t, s.UpdateAgentWith(ctx, &gone, store.UpdateAgentOptions{ReserveLimit: new(0)}), store.ErrNotFound)
	reserved(map[string]int{b.ID: 2})

	// A slot held on another broker is never moved with the agent's
	// broker (spec: "its reservation is never moved"): ErrReservationScope,
	// and neither the agent (its broker included) nor the slot written.
	// Release, then the update, changes brokers.
	moved := c
	moved.BrokerID, moved.Delegator = b2.ID, "user-5"
	wantErr(t, s.UpdateAgentWith(ctx, &moved, store.UpdateAgentOptions{ReserveLimit: &one}), store.ErrReservationScope)
	if moved.Version != c.Version {
		t.Fatalf("refused update moved the argument's version to %d", moved.Version)
	}
	stored(a.ID, "user-2", c.Version)
	if got, err := s.GetAgent(ctx, a.ID); err != nil || got.BrokerID != b.ID {
		t.Fatalf("refused update: agent %+v, %v; want it still on broker %s", got, err, b.ID)
	}
	reserved(map[string]int{b.ID: 2})
	must(t, s.Release(ctx, a.ID))
	c.BrokerID = b2.ID
	must(t, s.UpdateAgentWith(ctx, &c, store.UpdateAgentOptions{ReserveLimit: &one}))
	stored(a.ID, "user-2", c.Version)
	reserved(map[string]int{b.ID: 1, b2.ID: 1})

	// No limit: UpdateAgent, no slot.
	h := *holder
	must(t, s.Release(ctx, holder.ID))
	h.Delegator = "user-4"
	must(t, s.UpdateAgentWith(ctx, &h, store.UpdateAgentOptions{}))
	stored(holder.ID, "user-4", h.Version)
	reserved(map[string]int{b2.ID: 1})
}

// testReserveOnGoneBroker: a force-deregistered broker's agents keep their
// slots (migration 0007); reserving a holder's slot there again is
// idempotent, as for any holder, alone or with an agent update, while a
// new slot on the gone broker is ErrNotFound.
func testReserveOnGoneBroker(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a, other := newAgent(t, s, p.ID, "a", b.ID), newAgent(t, s, p.ID, "other", b.ID)
	must(t, s.Reserve(ctx, b.ID, a.ID, 1))
	must(t, s.DeleteBroker(ctx, b.ID, true))
	must(t, s.Reserve(ctx, b.ID, a.ID, 1))
	c := *a
	c.Delegator = "user-1"
	must(t, s.UpdateAgentWith(ctx, &c, store.UpdateAgentOptions{ReserveLimit: new(1)}))
	wantErr(t, s.Reserve(ctx, b.ID, other.ID, 0), store.ErrNotFound)
	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	if n != 1 {
		t.Fatalf("CountReservations = %d, want 1", n)
	}
}
