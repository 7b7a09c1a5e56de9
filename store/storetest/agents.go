package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func testAgents(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	p2 := newProject(t, s, "p2")
	b := newBroker(t, s, "b")

	a := fullAgent(p.ID, "worker-1", b.ID)
	in := *a
	must(t, s.CreateAgent(ctx, a, nil))
	if id, err := uuid.Parse(a.ID); err != nil || id.Version() != 7 {
		t.Fatalf("generated ID %q is not a UUIDv7 (%v)", a.ID, err)
	}
	if a.Version != 1 {
		t.Fatalf("new agent Version = %d, want 1", a.Version)
	}
	if a.CreatedAt != norm(in.CreatedAt) || a.UpdatedAt != a.CreatedAt {
		t.Fatalf("times not normalised: %v %v", a.CreatedAt, a.UpdatedAt)
	}
	for i, g := range a.Generations {
		if g.StartedAt != norm(in.Generations[i].StartedAt) {
			t.Fatalf("generation %d StartedAt = %v, want %v", i, g.StartedAt, norm(in.Generations[i].StartedAt))
		}
	}
	if in.Generations[0].StartedAt == a.Generations[0].StartedAt {
		t.Fatal("CreateAgent normalised the caller's Generations slice in place")
	}

	got, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	equal(t, got, a)
	if string(got.Payload) != string(in.Payload) {
		t.Fatalf("payload = %s, want the exact bytes %s", got.Payload, in.Payload)
	}
	got, err = s.GetAgentBySlug(ctx, p.ID, "worker-1")
	must(t, err)
	equal(t, got, a)

	_, err = s.GetAgent(ctx, "missing")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetAgentBySlug(ctx, p.ID, "missing")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetAgentBySlug(ctx, p2.ID, "worker-1")
	wantErr(t, err, store.ErrNotFound)

	// (ProjectID, Slug) and ID are unique; the slug is free in another project.
	dup := &store.Agent{Slug: "worker-1", ProjectID: p.ID}
	wantErr(t, s.CreateAgent(ctx, dup, nil), store.ErrAlreadyExists)
	if dup.ID != "" || dup.Version != 0 {
		t.Fatalf("failed create modified its argument: %+v", dup)
	}
	wantErr(t, s.CreateAgent(ctx, &store.Agent{ID: a.ID, Slug: "other", ProjectID: p.ID}, nil), store.ErrAlreadyExists)
	other := &store.Agent{Slug: "worker-1", ProjectID: p2.ID}
	must(t, s.CreateAgent(ctx, other, nil))

	// The project must exist.
	wantErr(t, s.CreateAgent(ctx, &store.Agent{Slug: "x", ProjectID: "missing"}, nil), store.ErrNotFound)
	// The payload must be JSON.
	if err := s.CreateAgent(ctx, &store.Agent{Slug: "bad", ProjectID: p.ID, Payload: []byte("{not json")}, nil); err == nil {
		t.Fatal("CreateAgent accepted a payload that is not JSON")
	}

	// A sparse agent: nil stays nil, empty stays empty.
	sparse := &store.Agent{ID: "sparse", Slug: "sparse", ProjectID: p.ID, Command: []string{}, Env: map[string]string{},
		Ports: []int{}}
	must(t, s.CreateAgent(ctx, sparse, nil))
	got, err = s.GetAgent(ctx, "sparse")
	must(t, err)
	equal(t, got, sparse)
	if got.Command == nil || got.Env == nil || got.Ports == nil || got.Generations != nil || got.Payload != nil ||
		got.PortMappings != nil {
		t.Fatalf("sparse agent read back as %+v", got)
	}
	// A caller-chosen Version is kept.
	v7 := &store.Agent{Slug: "v7", ProjectID: p.ID, Version: 7}
	must(t, s.CreateAgent(ctx, v7, nil))
	if got, err := s.GetAgent(ctx, v7.ID); err != nil || got.Version != 7 {
		t.Fatalf("GetAgent = %+v, %v; want Version 7", got, err)
	}
}

func testUpdateAgent(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a := fullAgent(p.ID, "a", b.ID)
	must(t, s.CreateAgent(ctx, a, nil))
	newAgent(t, s, p.ID, "taken", "")
	stale := *a
	created := a.CreatedAt

	a.Phase, a.ContainerStatus, a.StatusMessage = api.PhaseRunning, api.ContainerRunning, ""
	a.Env = nil
	a.Payload = nil
	a.Generation = 3
	a.Generations = append(slices.Clone(a.Generations), api.Generation{Number: 3, StartedAt: oddTime()})
	a.CreatedAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // ignored
	before := a.UpdatedAt
	must(t, s.UpdateAgent(ctx, a))
	if a.Version != 2 {
		t.Fatalf("Version after update = %d, want 2", a.Version)
	}
	if !a.UpdatedAt.After(before) || a.UpdatedAt != norm(a.UpdatedAt) {
		t.Fatalf("UpdatedAt = %v, want normalised and after %v", a.UpdatedAt, before)
	}
	if g := a.Generations[2].StartedAt; g != norm(g) {
		t.Fatalf("generation time not normalised: %v", g)
	}
	got, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	want := *a
	want.CreatedAt = created
	equal(t, got, &want)

	// The copy read before the update is stale now.
	stale.Phase = api.PhaseError
	wantErr(t, s.UpdateAgent(ctx, &stale), store.ErrConflict)
	if stale.Version != 1 {
		t.Fatalf("failed update changed Version to %d", stale.Version)
	}
	got, err = s.GetAgent(ctx, a.ID)
	must(t, err)
	equal(t, got, &want)

	// A fresh copy updates again.
	got.Phase = api.PhaseStopped
	must(t, s.UpdateAgent(ctx, got))
	if got.Version != 3 {
		t.Fatalf("Version = %d, want 3", got.Version)
	}

	// Renaming onto a taken slug, or updating a missing agent.
	got.Slug = "taken"
	wantErr(t, s.UpdateAgent(ctx, got), store.ErrAlreadyExists)
	wantErr(t, s.UpdateAgent(ctx, &store.Agent{ID: "missing", Slug: "m", ProjectID: p.ID, Version: 1}), store.ErrNotFound)
}

func testDeleteAgent(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a := newAgent(t, s, p.ID, "a", b.ID)
	keep := newAgent(t, s, p.ID, "keep", b.ID)
	must(t, s.Reserve(ctx, b.ID, a.ID, 0))
	must(t, s.Reserve(ctx, b.ID, keep.ID, 0))
	must(t, s.CreateToken(ctx, &store.Token{Hash: []byte("agent-a"), Kind: store.TokenAgent, AgentID: a.ID, ProjectID: p.ID}))
	must(t, s.CreateToken(ctx, &store.Token{Hash: []byte("agent-keep"), Kind: store.TokenAgent, AgentID: keep.ID}))
	must(t, s.CreateToken(ctx, &store.Token{Hash: []byte("user"), Kind: store.TokenUser, UserID: "u"}))

	must(t, s.DeleteAgent(ctx, a.ID))
	_, err := s.GetAgent(ctx, a.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteAgent(ctx, a.ID), store.ErrNotFound)

	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	if n != 1 {
		t.Fatalf("CountReservations = %d after deleting one of two holders, want 1", n)
	}
	ids, err := s.ReservedAgents(ctx, b.ID)
	must(t, err)
	if len(ids) != 1 || ids[0] != keep.ID {
		t.Fatalf("ReservedAgents = %v, want [%s]", ids, keep.ID)
	}
	if ids, err := s.ReservedAgents(ctx, "no-such-broker"); err != nil || len(ids) != 0 {
		t.Fatalf("ReservedAgents of an unknown broker = %v, %v", ids, err)
	}
	_, err = s.GetTokenByHash(ctx, []byte("agent-a"))
	wantErr(t, err, store.ErrNotFound)
	for _, h := range []string{"agent-keep", "user"} {
		if _, err := s.GetTokenByHash(ctx, []byte(h)); err != nil {
			t.Fatalf("token %q: %v", h, err)
		}
	}
	// The slug is free again.
	newAgent(t, s, p.ID, "a", b.ID)
}

func testListAgentsFilter(t *testing.T, s store.Store) {
	ctx := t.Context()
	p1, p2 := newProject(t, s, "p1"), newProject(t, s, "p2")
	b1, b2 := newBroker(t, s, "b1"), newBroker(t, s, "b2")
	var all []*store.Agent
	i := 0
	for _, pid := range []string{p1.ID, p2.ID} {
		for _, bid := range []string{b1.ID, b2.ID, ""} {
			for _, phase := range []string{api.PhaseRunning, api.PhaseStopped} {
				for range 2 {
					a := &store.Agent{Slug: slug(i), ProjectID: pid, BrokerID: bid, Phase: phase}
					i++
					must(t, s.CreateAgent(ctx, a, nil))
					all = append(all, a)
				}
			}
		}
	}
	for _, f := range []store.AgentFilter{
		{},
		{ProjectID: p1.ID},
		{BrokerID: b2.ID},
		{Phase: api.PhaseStopped},
		{ProjectID: p2.ID, BrokerID: b1.ID},
		{ProjectID: p1.ID, Phase: api.PhaseRunning},
		{ProjectID: p2.ID, BrokerID: b2.ID, Phase: api.PhaseStopped},
		{ProjectID: "missing"},
	} {
		var want []string
		for _, a := range all {
			if (f.ProjectID == "" || a.ProjectID == f.ProjectID) && (f.BrokerID == "" || a.BrokerID == f.BrokerID) &&
				(f.Phase == "" || a.Phase == f.Phase) {
				want = append(want, a.ID)
			}
		}
		slices.Sort(want)
		if want == nil {
			want = []string{}
		}
		items, next, total, err := s.ListAgents(ctx, f, store.Page{})
		must(t, err)
		if total != len(want) || next != "" {
			t.Fatalf("filter %+v: total %d, next %q; want total %d and no next page", f, total, next, len(want))
		}
		equal(t, agentIDs(items), want)
	}
	// Records come back whole from a list too.
	items, _, _, err := s.ListAgents(ctx, store.AgentFilter{ProjectID: all[0].ProjectID}, store.Page{Limit: 1})
	must(t, err)
	equal(t, items[0], all[0])
}
