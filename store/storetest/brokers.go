package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func testBrokers(t *testing.T, s store.Store) {
	ctx := t.Context()
	maxAgents := 5
	b := &store.Broker{
		Name:            "laptop",
		Status:          api.BrokerOnline,
		Version:         "1.2.3",
		ProtocolVersion: 2,
		Runtime:         "docker",
		Capabilities:    []string{"attach", "exec"},
		Profiles: []api.BrokerProfile{
			{Name: "docker", Runtime: "docker", Default: true, Settings: map[string]string{"cpus": "2"}},
			{Name: "podman", Runtime: "podman"},
		},
		Settings:    api.BrokerSettings{MaxAgents: &maxAgents},
		AutoProvide: true,
		Secret:      []byte{0, 1, 2, 255},
		CreatedBy:   "user-1",
		LastSeen:    oddTime(),
		CreatedAt:   oddTime(),
	}
	must(t, s.CreateBroker(ctx, b))
	if id, err := uuid.Parse(b.ID); err != nil || id.Version() != 7 {
		t.Fatalf("generated ID %q is not a UUIDv7 (%v)", b.ID, err)
	}
	if b.LastSeen != norm(b.LastSeen) || b.CreatedAt != norm(b.CreatedAt) || b.UpdatedAt != b.CreatedAt {
		t.Fatalf("times not normalised: %+v", b)
	}
	got, err := s.GetBroker(ctx, b.ID)
	must(t, err)
	equal(t, got, b)
	got, err = s.GetBroker(ctx, "laptop")
	must(t, err)
	equal(t, got, b)
	_, err = s.GetBroker(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)

	// A sparse broker: nil and empty collections both round-trip, a zero
	// LastSeen stays zero.
	sparse := &store.Broker{ID: "sparse", Name: "sparse", Capabilities: []string{}}
	must(t, s.CreateBroker(ctx, sparse))
	got, err = s.GetBroker(ctx, "sparse")
	must(t, err)
	equal(t, got, sparse)
	if got.Capabilities == nil || got.Profiles != nil || got.Secret != nil || !got.LastSeen.IsZero() {
		t.Fatalf("sparse broker read back as %+v", got)
	}

	wantErr(t, s.CreateBroker(ctx, &store.Broker{Name: "laptop"}), store.ErrAlreadyExists)
	wantErr(t, s.CreateBroker(ctx, &store.Broker{ID: b.ID, Name: "x"}), store.ErrAlreadyExists)

	// ID wins over name.
	must(t, s.CreateBroker(ctx, &store.Broker{ID: "named-like-id", Name: b.ID}))
	if got, err := s.GetBroker(ctx, b.ID); err != nil || got.ID != b.ID {
		t.Fatalf("GetBroker(%q) = %+v, %v; want the broker with that ID", b.ID, got, err)
	}

	// UpdateBroker writes everything but ID and CreatedAt.
	upd := *b
	upd.Name, upd.Status, upd.Version, upd.ProtocolVersion = "laptop2", api.BrokerOffline, "1.3.0", 3
	upd.Capabilities, upd.Profiles, upd.Settings = nil, []api.BrokerProfile{}, api.BrokerSettings{}
	upd.AutoProvide, upd.Secret, upd.LastSeen = false, []byte("new"), time.Time{}
	upd.CreatedAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // ignored
	must(t, s.UpdateBroker(ctx, &upd))
	if !upd.UpdatedAt.After(b.UpdatedAt) {
		t.Fatalf("UpdatedAt %v not after %v", upd.UpdatedAt, b.UpdatedAt)
	}
	got, err = s.GetBroker(ctx, b.ID)
	must(t, err)
	want := upd
	want.CreatedAt = b.CreatedAt
	equal(t, got, &want)

	upd.Name = "sparse"
	wantErr(t, s.UpdateBroker(ctx, &upd), store.ErrAlreadyExists)
	wantErr(t, s.UpdateBroker(ctx, &store.Broker{ID: "missing", Name: "m"}), store.ErrNotFound)

	// SetBrokerStatus touches status and LastSeen only.
	seen := oddTime().Add(30 * time.Minute)
	must(t, s.SetBrokerStatus(ctx, b.ID, api.BrokerOnline, seen))
	got, err = s.GetBroker(ctx, b.ID)
	must(t, err)
	want.Status, want.LastSeen = api.BrokerOnline, norm(seen)
	equal(t, got, &want)
	wantErr(t, s.SetBrokerStatus(ctx, "missing", api.BrokerOnline, seen), store.ErrNotFound)

	// Caller-chosen IDs page in byte order.
	items, next, total, err := s.ListBrokers(ctx, store.Page{Limit: 2})
	must(t, err)
	if total != 3 || next == "" || len(items) != 2 {
		t.Fatalf("ListBrokers = %d items, next %q, total %d", len(items), next, total)
	}
	rest, next2, _, err := s.ListBrokers(ctx, store.Page{Cursor: next, Limit: 2})
	must(t, err)
	if next2 != "" || len(rest) != 1 {
		t.Fatalf("second page: %d items, next %q", len(rest), next2)
	}
	all := append(items, rest...)
	equal(t, ids(all, func(b *store.Broker) string { return b.ID }), []string{b.ID, "named-like-id", "sparse"})
	equal(t, all[0], &want)
}

func testDeleteBroker(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "doomed")
	other := newBroker(t, s, "other")
	must(t, s.LinkProvider(ctx, p.ID, b.ID))
	must(t, s.LinkProvider(ctx, p.ID, other.ID))
	p.DefaultBrokerID = b.ID
	must(t, s.UpdateProject(ctx, p))
	a := newAgent(t, s, p.ID, "a", b.ID)
	a2 := newAgent(t, s, p.ID, "a2", other.ID)
	must(t, s.Reserve(ctx, b.ID, a.ID, 0))
	must(t, s.Reserve(ctx, other.ID, a2.ID, 0))

	// Not without force while it has an agent: nothing changes.
	wantErr(t, s.DeleteBroker(ctx, b.ID, false), store.ErrConflict)
	if _, err := s.GetBroker(ctx, b.ID); err != nil {
		t.Fatalf("a refused delete removed the broker: %v", err)
	}
	providers, err := s.ProjectProviders(ctx, p.ID)
	must(t, err)
	if len(providers) != 2 {
		t.Fatalf("a refused delete unlinked a provider: %v", providers)
	}
	// Nor while it holds a slot of an agent assigned elsewhere.
	slotOnly := newBroker(t, s, "slot-only")
	a3 := newAgent(t, s, p.ID, "a3", other.ID)
	must(t, s.Reserve(ctx, slotOnly.ID, a3.ID, 0))
	wantErr(t, s.DeleteBroker(ctx, slotOnly.ID, false), store.ErrConflict)
	must(t, s.DeleteAgent(ctx, a3.ID))
	must(t, s.DeleteBroker(ctx, slotOnly.ID, false))
	// An idle broker goes without force.
	idle := newBroker(t, s, "idle")
	must(t, s.DeleteBroker(ctx, idle.ID, false))

	must(t, s.DeleteBroker(ctx, b.ID, true))
	_, err = s.GetBroker(ctx, b.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteBroker(ctx, b.ID, true), store.ErrNotFound)
	wantErr(t, s.DeleteBroker(ctx, b.ID, false), store.ErrNotFound)

	providers, err = s.ProjectProviders(ctx, p.ID)
	must(t, err)
	equal(t, providers, []string{other.ID})
	got, err := s.GetProject(ctx, p.ID)
	must(t, err)
	if got.DefaultBrokerID != "" {
		t.Fatalf("project default still names the deleted broker: %q", got.DefaultBrokerID)
	}
	// The stranded agent keeps its record, the broker it ran on and its
	// reservation: nothing says its workload was torn down.
	ga, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	if ga.BrokerID != b.ID {
		t.Fatalf("agent BrokerID = %q, want %q", ga.BrokerID, b.ID)
	}
	counts, err := s.ReservationCounts(ctx)
	must(t, err)
	equal(t, counts, map[string]int{b.ID: 1, other.ID: 1})
	reserved, err := s.ReservedAgents(ctx, b.ID)
	must(t, err)
	equal(t, reserved, []string{a.ID})
	// No new slot on the deleted broker; deleting the agent frees its slot.
	wantErr(t, s.Reserve(ctx, b.ID, a2.ID, 0), store.ErrNotFound)
	must(t, s.DeleteAgent(ctx, a.ID))
	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	if n != 0 {
		t.Fatalf("deleted agent still holds %d reservations", n)
	}
}

// testDeleteBrokerRace: a deregistration without force racing a create
// that reserves on the broker never lets both succeed: either the agent
// exists and the broker stays (ErrConflict), or the broker is gone and the
// create failed (ErrNotFound). A stranded agent is only ever the result of
// a forced delete.
func testDeleteBrokerRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	zero := 0
	for k := range 20 {
		b := newBroker(t, s, fmt.Sprintf("b%d", k))
		var createErr, deleteErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			createErr = s.CreateAgent(ctx, &store.Agent{Slug: fmt.Sprintf("a%d", k), ProjectID: p.ID, BrokerID: b.ID, Phase: api.PhaseCreated}, &zero)
		})
		wg.Go(func() {
			<-start
			deleteErr = s.DeleteBroker(ctx, b.ID, false)
		})
		close(start)
		wg.Wait()
		switch {
		case createErr == nil && errors.Is(deleteErr, store.ErrConflict):
		case errors.Is(createErr, store.ErrNotFound) && deleteErr == nil:
		default:
			t.Fatalf("round %d: create %v, delete %v; want exactly one to succeed", k, createErr, deleteErr)
		}
	}
}

// testCreateOnGoneBroker: a create naming a broker that was deregistered
// (forced) fails with ErrNotFound and writes nothing, whatever it writes
// with the agent.
func testCreateOnGoneBroker(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	must(t, s.DeleteBroker(ctx, b.ID, true))
	zero, one := 0, 1
	key := func() *store.IdempotencyRecord {
		now := time.Now()
		return &store.IdempotencyRecord{Caller: "user:u1", Key: "k", RequestHash: "h", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	for i, o := range []store.CreateAgentOptions{
		{},
		{ReserveLimit: &zero},
		{ReserveLimit: &one},
		{LinkProvider: true},
		{Key: key()},
		{Key: key(), ReserveLimit: &zero, LinkProvider: true},
	} {
		_, err := s.CreateAgentWith(ctx, &store.Agent{Slug: slug(i), ProjectID: p.ID, BrokerID: b.ID, Phase: api.PhaseCreated}, o)
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "broker") {
			t.Fatalf("create %d (%+v): %v, want a broker's ErrNotFound", i, o, err)
		}
	}
	wantErr(t, s.CreateAgent(ctx, &store.Agent{Slug: "plain", ProjectID: p.ID, BrokerID: b.ID}, nil), store.ErrNotFound)
	_, _, total, err := s.ListAgents(ctx, store.AgentFilter{}, store.Page{})
	must(t, err)
	if total != 0 {
		t.Fatalf("%d agents written on a gone broker, want none", total)
	}
	if n, err := s.CountReservations(ctx, b.ID); err != nil || n != 0 {
		t.Fatalf("reservations on the gone broker: %d (%v), want none", n, err)
	}
	// The key was not claimed either: a create on a live broker may use it.
	live := newBroker(t, s, "live")
	_, err = s.CreateAgentWith(ctx, &store.Agent{Slug: "ok", ProjectID: p.ID, BrokerID: live.ID}, store.CreateAgentOptions{Key: key()})
	must(t, err)
}

// testDeleteBrokerCreateWithoutSlotRace: a deregistration without force
// racing creates that take no slot on the broker ends either with the
// broker gone and no agent on it (every create ErrNotFound) or with the
// broker kept (ErrConflict) and its agents refusing a later deletion: never
// an agent whose broker is gone.
func testDeleteBrokerCreateWithoutSlotRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	const creates = 4
	deleted, kept := 0, 0
	defer func() { t.Logf("broker deleted in %d rounds, kept in %d", deleted, kept) }()
	for k := range 25 {
		b := newBroker(t, s, fmt.Sprintf("b%d", k))
		createErr := make([]error, creates)
		var deleteErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range creates {
			wg.Go(func() {
				<-start
				a := &store.Agent{Slug: fmt.Sprintf("a%d-%d", k, i), ProjectID: p.ID, BrokerID: b.ID, Phase: api.PhaseCreated}
				_, createErr[i] = s.CreateAgentWith(ctx, a, store.CreateAgentOptions{})
			})
		}
		wg.Go(func() {
			<-start
			deleteErr = s.DeleteBroker(ctx, b.ID, false)
		})
		close(start)
		wg.Wait()
		_, _, onBroker, err := s.ListAgents(ctx, store.AgentFilter{BrokerID: b.ID}, store.Page{})
		must(t, err)
		created := 0
		for i, err := range createErr {
			switch {
			case err == nil:
				created++
			case !errors.Is(err, store.ErrNotFound):
				t.Fatalf("round %d: create %d: %v, want success or ErrNotFound", k, i, err)
			}
		}
		if onBroker != created {
			t.Fatalf("round %d: %d agents on the broker, %d creates succeeded", k, onBroker, created)
		}
		_, gone := s.GetBroker(ctx, b.ID)
		switch {
		case deleteErr == nil:
			if !errors.Is(gone, store.ErrNotFound) || created != 0 {
				t.Fatalf("round %d: broker deleted (%v) with %d agents created on it", k, gone, created)
			}
			deleted++
		case errors.Is(deleteErr, store.ErrConflict):
			if gone != nil || created == 0 {
				t.Fatalf("round %d: deletion refused, broker %v, %d agents", k, gone, created)
			}
			wantErr(t, s.DeleteBroker(ctx, b.ID, false), store.ErrConflict)
			kept++
		default:
			t.Fatalf("round %d: delete %v", k, deleteErr)
		}
	}
}
