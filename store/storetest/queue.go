package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func stopFor(b *store.Broker, a *store.Agent) *store.Dispatch {
	return &store.Dispatch{BrokerID: b.ID, AgentID: a.ID, RunID: a.RunID, Method: "agent.stop",
		Body: json.RawMessage(`{"agentId": "` + a.ID + `",  "graceMs":0}`), CreatedBy: "user:u1"}
}

func pendingIDs(t *testing.T, s store.Store, brokerID string, limit int) []string {
	t.Helper()
	ds, err := s.PendingDispatches(t.Context(), brokerID, limit)
	must(t, err)
	return ids(ds, func(d *store.Dispatch) string { return d.ID })
}

func testDispatchQueue(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b, b2 := newBroker(t, s, "b"), newBroker(t, s, "b2")
	var a [4]*store.Agent
	for i := range a {
		a[i] = newAgent(t, s, p.ID, slug(i), b.ID)
	}
	equal(t, pendingIDs(t, s, b.ID, 0), []string{})

	// Enqueue fills in ID, key, status and times, keeps the body's bytes
	// and writes the agent in the same transaction.
	d0 := stopFor(b, a[0])
	ag := *a[0]
	ag.Phase, ag.ContainerStatus = api.PhaseStopped, api.ContainerStopQueued
	created, err := s.EnqueueDispatch(ctx, d0, &ag)
	must(t, err)
	if !created || d0.ID == "" || d0.Key != "queued:"+d0.ID || d0.Status != store.DispatchPending || d0.Seq == 0 ||
		d0.CreatedAt.IsZero() || d0.UpdatedAt != d0.CreatedAt || d0.Attempts != 0 {
		t.Fatalf("enqueued %+v (created %v)", d0, created)
	}
	got, err := s.GetDispatch(ctx, d0.ID)
	must(t, err)
	equal(t, got, d0)
	if ag.Version != a[0].Version+1 {
		t.Fatalf("agent version %d after enqueue, want %d", ag.Version, a[0].Version+1)
	}
	stored, err := s.GetAgent(ctx, a[0].ID)
	must(t, err)
	equal(t, stored, &ag)

	// A second stop for the same agent is the pending one: nothing is
	// written, not even the agent.
	dup := stopFor(b, a[0])
	dupAgent := ag
	dupAgent.StatusMessage = "must not be written"
	created, err = s.EnqueueDispatch(ctx, dup, &dupAgent)
	must(t, err)
	if created {
		t.Fatal("second enqueue for the same agent and method created a dispatch")
	}
	equal(t, dup, d0)
	stored, err = s.GetAgent(ctx, a[0].ID)
	must(t, err)
	equal(t, stored, &ag)

	// A stale agent copy writes nothing at all.
	stale := *a[1] // a[1] is unchanged, so bump the stored version first
	fresh := *a[1]
	fresh.StatusMessage = "moved on"
	must(t, s.UpdateAgent(ctx, &fresh))
	_, err = s.EnqueueDispatch(ctx, stopFor(b, a[1]), &stale)
	wantErr(t, err, store.ErrConflict)
	equal(t, pendingIDs(t, s, b.ID, 0), []string{d0.ID})

	// Another method for the same agent, a key of the caller's choice, no
	// agent write, no body.
	d1 := &store.Dispatch{BrokerID: b.ID, AgentID: a[0].ID, Method: "agent.suspend", Key: "stop:caller-key"}
	created, err = s.EnqueueDispatch(ctx, d1, nil)
	must(t, err)
	if !created || d1.Key != "stop:caller-key" || d1.Body != nil || d1.Seq <= d0.Seq {
		t.Fatalf("second method: %+v (created %v)", d1, created)
	}
	d2 := stopFor(b, a[2])
	d3 := stopFor(b2, a[3])
	for _, d := range []*store.Dispatch{d2, d3} {
		if created, err := s.EnqueueDispatch(ctx, d, nil); err != nil || !created {
			t.Fatalf("enqueue: %v %v", created, err)
		}
	}
	// In order, per broker, limited.
	equal(t, pendingIDs(t, s, b.ID, 0), []string{d0.ID, d1.ID, d2.ID})
	equal(t, pendingIDs(t, s, b.ID, 2), []string{d0.ID, d1.ID})
	equal(t, pendingIDs(t, s, b2.ID, 0), []string{d3.ID})

	// Attempts count up while pending.
	n, err := s.NoteDispatchAttempt(ctx, d0.ID, "runtime_broker_unavailable: connection lost")
	must(t, err)
	n2, err := s.NoteDispatchAttempt(ctx, d0.ID, "runtime_broker_timeout")
	must(t, err)
	if n != 1 || n2 != 2 {
		t.Fatalf("attempts %d, %d; want 1, 2", n, n2)
	}
	got, err = s.GetDispatch(ctx, d0.ID)
	must(t, err)
	if got.Attempts != 2 || got.Result != "runtime_broker_timeout" || got.Status != store.DispatchPending {
		t.Fatalf("after attempts: %+v", got)
	}
	_, err = s.NoteDispatchAttempt(ctx, "missing", "")
	wantErr(t, err, store.ErrNotFound)

	// Finish once; a second finish (another Hub) learns it lost.
	must(t, s.FinishDispatch(ctx, d0.ID, store.DispatchDelivered, "exited"))
	wantErr(t, s.FinishDispatch(ctx, d0.ID, store.DispatchFailed, "again"), store.ErrConflict)
	_, err = s.NoteDispatchAttempt(ctx, d0.ID, "")
	wantErr(t, err, store.ErrConflict)
	wantErr(t, s.FinishDispatch(ctx, "missing", store.DispatchDelivered, ""), store.ErrNotFound)
	wantErr(t, s.FinishDispatch(ctx, d1.ID, store.DispatchPending, ""), store.ErrConflict)
	must(t, s.FinishDispatch(ctx, d1.ID, store.DispatchSkipped, "agent deleted"))
	got, err = s.GetDispatch(ctx, d0.ID)
	must(t, err)
	if got.Status != store.DispatchDelivered || got.Result != "exited" || got.UpdatedAt.Before(got.CreatedAt) {
		t.Fatalf("finished: %+v", got)
	}
	equal(t, pendingIDs(t, s, b.ID, 0), []string{d2.ID})

	// Once the pending stop is finished, a new one queues behind the rest.
	d4 := stopFor(b, a[0])
	created, err = s.EnqueueDispatch(ctx, d4, nil)
	must(t, err)
	if !created || d4.ID == d0.ID || d4.Seq <= d3.Seq {
		t.Fatalf("re-enqueue after delivery: %+v (created %v)", d4, created)
	}
	equal(t, pendingIDs(t, s, b.ID, 0), []string{d2.ID, d4.ID})

	// Pruning removes finished dispatches only.
	pruned, err := s.PruneDispatches(ctx, time.Now().Add(time.Hour))
	must(t, err)
	if pruned != 2 {
		t.Fatalf("pruned %d, want the 2 finished", pruned)
	}
	_, err = s.GetDispatch(ctx, d0.ID)
	wantErr(t, err, store.ErrNotFound)
	equal(t, pendingIDs(t, s, b.ID, 0), []string{d2.ID, d4.ID})
	pruned, err = s.PruneDispatches(ctx, time.Now().Add(-time.Hour))
	must(t, err)
	if pruned != 0 {
		t.Fatalf("pruned %d with an old cutoff", pruned)
	}

	// A queue outlives its agent (the dispatch is skipped on delivery)
	// but not its broker.
	must(t, s.DeleteAgent(ctx, a[2].ID))
	equal(t, pendingIDs(t, s, b.ID, 0), []string{d2.ID, d4.ID})
	must(t, s.DeleteBroker(ctx, b2.ID, true))
	equal(t, pendingIDs(t, s, b2.ID, 0), []string{})
	_, err = s.GetDispatch(ctx, d3.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.EnqueueDispatch(ctx, &store.Dispatch{BrokerID: "missing", AgentID: a[1].ID, Method: "agent.stop"}, nil)
	wantErr(t, err, store.ErrNotFound)
}

// testEnqueueDispatchRace: 50 concurrent stops for one agent make one
// pending dispatch, and every caller gets that one.
func testEnqueueDispatchRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a := newAgent(t, s, p.ID, "a", b.ID)
	var mu sync.Mutex
	seen := map[string]int{}
	created := race(t, 50, store.ErrAlreadyExists, func(int) error {
		d := stopFor(b, a)
		created, err := s.EnqueueDispatch(ctx, d, nil)
		if err != nil {
			return err
		}
		mu.Lock()
		seen[d.ID]++
		mu.Unlock()
		if !created {
			return store.ErrAlreadyExists
		}
		return nil
	})
	if created != 1 || len(seen) != 1 {
		t.Fatalf("%d enqueues created a dispatch and callers saw %d different ones, want 1 and 1: %v", created, len(seen), seen)
	}
	if got := pendingIDs(t, s, b.ID, 0); len(got) != 1 {
		t.Fatalf("%d pending dispatches, want 1", len(got))
	}
}

func testIdempotencyKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	now := time.Now()
	rec := func(caller, key, hash string, at time.Time) *store.IdempotencyRecord {
		return &store.IdempotencyRecord{Caller: caller, Key: key, RequestHash: hash, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
	}
	one := 1

	r1 := rec("user:u1", "k1", "h1", now)
	a1 := &store.Agent{Slug: "a1", ProjectID: p.ID, BrokerID: b.ID}
	must(t, createKeyed(ctx, s, a1, &one, r1))
	if r1.AgentID != a1.ID || r1.Status != 0 || r1.CreatedAt != norm(now) {
		t.Fatalf("claimed %+v for agent %s", r1, a1.ID)
	}
	got, err := s.GetIdempotencyRecord(ctx, "user:u1", "k1", now)
	must(t, err)
	equal(t, got, r1)

	// The same key again, even for another slug: nothing is created, and
	// a used key wins over a duplicate slug.
	for _, slug := range []string{"a1", "other"} {
		err = createKeyed(ctx, s, &store.Agent{Slug: slug, ProjectID: p.ID, BrokerID: b.ID}, nil, rec("user:u1", "k1", "h2", now))
		wantErr(t, err, store.ErrKeyInUse)
	}
	_, _, total, err := s.ListAgents(ctx, store.AgentFilter{}, store.Page{})
	must(t, err)
	if total != 1 {
		t.Fatalf("%d agents after replays, want 1", total)
	}
	// Keys are per caller.
	r2 := rec("user:u2", "k1", "h1", now)
	must(t, createKeyed(ctx, s, &store.Agent{Slug: "a2", ProjectID: p.ID, BrokerID: b.ID}, nil, r2))

	// A refused create (quota, duplicate slug) leaves no record behind.
	err = createKeyed(ctx, s, &store.Agent{Slug: "a3", ProjectID: p.ID, BrokerID: b.ID}, &one, rec("user:u1", "k-quota", "h", now))
	wantErr(t, err, store.ErrQuota)
	_, err = s.GetIdempotencyRecord(ctx, "user:u1", "k-quota", now)
	wantErr(t, err, store.ErrNotFound)
	err = createKeyed(ctx, s, &store.Agent{Slug: "a1", ProjectID: p.ID, BrokerID: b.ID}, nil, rec("user:u1", "k-dup", "h", now))
	wantErr(t, err, store.ErrAlreadyExists)
	_, err = s.GetIdempotencyRecord(ctx, "user:u1", "k-dup", now)
	wantErr(t, err, store.ErrNotFound)

	// The answer is stored byte for byte.
	body := []byte(`{"id": "x",  "phase":"running"}`)
	must(t, s.CompleteIdempotencyRecord(ctx, "user:u1", "k1", 201, body))
	got, err = s.GetIdempotencyRecord(ctx, "user:u1", "k1", now)
	must(t, err)
	if got.Status != 201 || string(got.Response) != string(body) {
		t.Fatalf("completed record: %d %q", got.Status, got.Response)
	}
	wantErr(t, s.CompleteIdempotencyRecord(ctx, "user:u1", "missing", 201, body), store.ErrNotFound)

	// Expired: absent for reads, claimable again, pruned.
	later := now.Add(25 * time.Hour)
	_, err = s.GetIdempotencyRecord(ctx, "user:u1", "k1", later)
	wantErr(t, err, store.ErrNotFound)
	r3 := rec("user:u1", "k1", "h3", later)
	a3 := &store.Agent{Slug: "a3", ProjectID: p.ID, BrokerID: b.ID}
	must(t, createKeyed(ctx, s, a3, nil, r3))
	got, err = s.GetIdempotencyRecord(ctx, "user:u1", "k1", later)
	must(t, err)
	if got.AgentID != a3.ID || got.RequestHash != "h3" || got.Status != 0 || got.Response != nil {
		t.Fatalf("reclaimed record: %+v", got)
	}
	pruned, err := s.PruneIdempotencyRecords(ctx, later)
	must(t, err)
	if pruned != 1 { // u2's k1, claimed at now
		t.Fatalf("pruned %d records, want 1", pruned)
	}
	_, err = s.GetIdempotencyRecord(ctx, "user:u2", "k1", now)
	wantErr(t, err, store.ErrNotFound)

	// A record must expire after it is made.
	bad := rec("user:u1", "k-bad", "h", now)
	bad.ExpiresAt = now
	wantErr(t, createKeyed(ctx, s, &store.Agent{Slug: "a4", ProjectID: p.ID, BrokerID: b.ID}, nil, bad), store.ErrConflict)
}

// testCreateAgentKeyedRace: 20 concurrent creates with one key make one
// agent.
func testCreateAgentKeyedRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	now := time.Now()
	won := race(t, 20, store.ErrKeyInUse, func(i int) error {
		return createKeyed(ctx, s, &store.Agent{Slug: slug(i), ProjectID: p.ID, BrokerID: b.ID}, nil,
			&store.IdempotencyRecord{Caller: "user:u1", Key: "k", RequestHash: "h", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	})
	if won != 1 {
		t.Fatalf("%d keyed creates succeeded, want 1", won)
	}
	_, _, total, err := s.ListAgents(ctx, store.AgentFilter{}, store.Page{})
	must(t, err)
	if total != 1 {
		t.Fatalf("%d agents, want 1", total)
	}
}

// createKeyed is CreateAgentWith with a key and a reservation only.
func createKeyed(ctx context.Context, s store.Store, a *store.Agent, reserveLimit *int, rec *store.IdempotencyRecord) error {
	_, err := s.CreateAgentWith(ctx, a, store.CreateAgentOptions{ReserveLimit: reserveLimit, Key: rec})
	return err
}

// testCreateAgentWithLink: the cascade's auto-link is written with the
// agent, its reservation and its key, or not at all.
func testCreateAgentWithLink(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	providers := func() []string {
		t.Helper()
		ids, err := s.ProjectProviders(ctx, p.ID)
		must(t, err)
		return ids
	}
	one := 1
	now := time.Now()
	key := &store.IdempotencyRecord{Caller: "user:u1", Key: "k", RequestHash: "h", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}

	// Refused for its name, its quota or its key: no link.
	must(t, s.CreateAgent(ctx, &store.Agent{Slug: "taken", ProjectID: p.ID, BrokerID: b.ID}, &one))
	_, err := s.CreateAgentWith(ctx, &store.Agent{Slug: "taken", ProjectID: p.ID, BrokerID: b.ID}, store.CreateAgentOptions{LinkProvider: true})
	wantErr(t, err, store.ErrAlreadyExists)
	_, err = s.CreateAgentWith(ctx, &store.Agent{Slug: "full", ProjectID: p.ID, BrokerID: b.ID}, store.CreateAgentOptions{LinkProvider: true, ReserveLimit: &one})
	wantErr(t, err, store.ErrQuota)
	k := *key
	must(t, createKeyed(ctx, s, &store.Agent{Slug: "keyed", ProjectID: p.ID, BrokerID: b.ID}, nil, &k))
	k2 := *key
	_, err = s.CreateAgentWith(ctx, &store.Agent{Slug: "again", ProjectID: p.ID, BrokerID: b.ID}, store.CreateAgentOptions{LinkProvider: true, Key: &k2})
	wantErr(t, err, store.ErrKeyInUse)
	if got := providers(); len(got) != 0 {
		t.Fatalf("refused creates linked %v", got)
	}
	for _, slug := range []string{"full", "again"} {
		if _, err := s.GetAgentBySlug(ctx, p.ID, slug); err == nil {
			t.Fatalf("refused create of %q left its agent", slug)
		}
	}

	// Made: the link is there with the agent, and reported as made once.
	two := 2
	a := &store.Agent{Slug: "linked", ProjectID: p.ID, BrokerID: b.ID}
	linked, err := s.CreateAgentWith(ctx, a, store.CreateAgentOptions{LinkProvider: true, ReserveLimit: &two})
	must(t, err)
	if !linked || len(providers()) != 1 || providers()[0] != b.ID {
		t.Fatalf("linked=%v providers=%v, want the link made", linked, providers())
	}
	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	if n != 2 {
		t.Fatalf("%d reservations, want 2", n)
	}
	linked, err = s.CreateAgentWith(ctx, &store.Agent{Slug: "second", ProjectID: p.ID, BrokerID: b.ID}, store.CreateAgentOptions{LinkProvider: true})
	must(t, err)
	if linked {
		t.Fatal("a link already there is reported as made")
	}
}

// testCreateAgentReplacing: a create takes the name of an agent at a
// known version in the same transaction, or writes nothing.
func testCreateAgentReplacing(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	one := 1
	two := 2
	old := &store.Agent{Slug: "x", ProjectID: p.ID, BrokerID: b.ID}
	must(t, s.CreateAgent(ctx, old, &one))
	must(t, s.CreateAgent(ctx, &store.Agent{Slug: "y", ProjectID: p.ID, BrokerID: b.ID}, &two))
	must(t, s.CreateToken(ctx, &store.Token{Kind: store.TokenAgent, AgentID: old.ID, Hash: []byte("h-old"), CreatedAt: time.Now()}))

	stale := *old
	stale.Version++
	_, err := s.CreateAgentWith(ctx, &store.Agent{Slug: "x", ProjectID: p.ID, BrokerID: b.ID}, store.CreateAgentOptions{Replace: &stale})
	wantErr(t, err, store.ErrConflict)
	// Refused for its quota (y holds the one slot left once old's goes):
	// old stays.
	_, err = s.CreateAgentWith(ctx, &store.Agent{Slug: "x", ProjectID: p.ID, BrokerID: b.ID}, store.CreateAgentOptions{Replace: old, ReserveLimit: &one, LinkProvider: true})
	if err == nil {
		t.Fatal("a replacing create over quota succeeded")
	}
	got, err := s.GetAgentBySlug(ctx, p.ID, "x")
	must(t, err)
	if got.ID != old.ID {
		t.Fatalf("refused replacing creates changed the agent: %s, want %s", got.ID, old.ID)
	}
	if ids, _ := s.ProjectProviders(ctx, p.ID); len(ids) != 0 {
		t.Fatalf("refused replacing create linked %v", ids)
	}

	// At its version: the old agent, its slot and its token go.
	n := &store.Agent{Slug: "x", ProjectID: p.ID, BrokerID: b.ID}
	_, err = s.CreateAgentWith(ctx, n, store.CreateAgentOptions{Replace: old, ReserveLimit: &two})
	must(t, err)
	got, err = s.GetAgentBySlug(ctx, p.ID, "x")
	must(t, err)
	if got.ID != n.ID {
		t.Fatalf("agent x is %s, want the new %s", got.ID, n.ID)
	}
	_, err = s.GetAgent(ctx, old.ID)
	wantErr(t, err, store.ErrNotFound)
	ids, err := s.ReservedAgents(ctx, b.ID)
	must(t, err)
	if len(ids) != 2 || !slices.Contains(ids, n.ID) || slices.Contains(ids, old.ID) {
		t.Fatalf("reserved %v, want y's and %s's", ids, n.ID)
	}
	if _, err := s.GetTokenByHash(ctx, []byte("h-old")); err == nil {
		t.Fatal("the replaced agent's token is still there")
	}
}

// testEnqueueWhileFinishing: enqueues for one agent racing with a drain
// that finishes each pending dispatch as it appears: every enqueue either
// creates the pending dispatch or returns the one pending, never fails
// because the one it met was finished before it could read it.
func testEnqueueWhileFinishing(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a := newAgent(t, s, p.ID, "a", b.ID)
	done := make(chan struct{})
	drained := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				drained <- nil
				return
			default:
			}
			ds, err := s.PendingDispatches(ctx, b.ID, 0)
			if err != nil {
				drained <- err
				return
			}
			for _, d := range ds {
				if err := s.FinishDispatch(ctx, d.ID, store.DispatchDelivered, ""); err != nil && !errors.Is(err, store.ErrConflict) {
					drained <- err
					return
				}
			}
		}
	}()
	var failed error
	for range 300 {
		if _, err := s.EnqueueDispatch(ctx, stopFor(b, a), nil); err != nil {
			failed = err
			break
		}
	}
	close(done)
	must(t, <-drained)
	if failed != nil {
		t.Fatalf("enqueue while the queue drains: %v", failed)
	}
}
