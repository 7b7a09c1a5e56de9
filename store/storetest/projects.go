package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func testProjects(t *testing.T, s store.Store) {
	ctx := t.Context()
	created := oddTime()
	p := &store.Project{Name: "alpha", GitRemote: "git@example.com:a/b.git", SharingMode: api.SharingSharedWorkspace,
		DefaultBrokerID: "broker-x", ActiveProfile: "docker", CreatedBy: "user:u1", CreatedAt: created}
	must(t, s.CreateProject(ctx, p))
	if id, err := uuid.Parse(p.ID); err != nil || id.Version() != 7 {
		t.Fatalf("generated ID %q is not a UUIDv7 (%v)", p.ID, err)
	}
	if p.CreatedAt != norm(created) || p.UpdatedAt != p.CreatedAt {
		t.Fatalf("times not normalised: created %v updated %v, want %v", p.CreatedAt, p.UpdatedAt, norm(created))
	}

	got, err := s.GetProject(ctx, p.ID)
	must(t, err)
	equal(t, got, p)
	got, err = s.GetProject(ctx, "alpha")
	must(t, err)
	equal(t, got, p)
	_, err = s.GetProject(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)

	// Unique name and ID; a failed create leaves the argument alone.
	dup := &store.Project{Name: "alpha"}
	wantErr(t, s.CreateProject(ctx, dup), store.ErrAlreadyExists)
	if dup.ID != "" || !dup.CreatedAt.IsZero() {
		t.Fatalf("failed create modified its argument: %+v", dup)
	}
	wantErr(t, s.CreateProject(ctx, &store.Project{ID: p.ID, Name: "other"}), store.ErrAlreadyExists)

	// Look-up by ID wins over look-up by name.
	q := &store.Project{ID: "q-project", Name: p.ID}
	must(t, s.CreateProject(ctx, q))
	if got, err := s.GetProject(ctx, p.ID); err != nil || got.ID != p.ID {
		t.Fatalf("GetProject(%q) = %+v, %v; want the project with that ID", p.ID, got, err)
	}
	if got, err := s.GetProject(ctx, "q-project"); err != nil || got.ID != "q-project" {
		t.Fatalf("GetProject(q-project) = %+v, %v", got, err)
	}

	// Update writes every field but ID and CreatedAt and bumps UpdatedAt.
	upd := *p
	upd.Name, upd.GitRemote, upd.SharingMode, upd.DefaultBrokerID, upd.ActiveProfile =
		"alpha2", "", api.SharingClonePerAgent, "", "k8s"
	upd.CreatedAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // must be ignored
	upd.CreatedBy = "user:someone-else"                         // kept too
	must(t, s.UpdateProject(ctx, &upd))
	if !upd.UpdatedAt.After(p.UpdatedAt) || upd.UpdatedAt != norm(upd.UpdatedAt) {
		t.Fatalf("UpdatedAt = %v, want normalised and after %v", upd.UpdatedAt, p.UpdatedAt)
	}
	got, err = s.GetProject(ctx, "alpha2")
	must(t, err)
	want := upd
	want.CreatedAt, want.CreatedBy = p.CreatedAt, p.CreatedBy
	equal(t, got, &want)
	// Lists read every column too.
	items, _, _, err := s.ListProjects(ctx, store.Page{})
	must(t, err)
	equal(t, items, []*store.Project{&want, q})
	_, err = s.GetProject(ctx, "alpha")
	wantErr(t, err, store.ErrNotFound)

	upd.Name = p.ID // taken by q
	wantErr(t, s.UpdateProject(ctx, &upd), store.ErrAlreadyExists)
	wantErr(t, s.UpdateProject(ctx, &store.Project{ID: "missing", Name: "m"}), store.ErrNotFound)
}

func testDeleteProject(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	must(t, s.LinkProvider(ctx, p.ID, b.ID))
	a := newAgent(t, s, p.ID, "a", b.ID)

	wantErr(t, s.DeleteProject(ctx, p.ID), store.ErrConflict)
	if _, err := s.GetProject(ctx, p.ID); err != nil {
		t.Fatalf("refused delete removed the project: %v", err)
	}
	must(t, s.DeleteAgent(ctx, a.ID))
	must(t, s.DeleteProject(ctx, p.ID))
	_, err := s.GetProject(ctx, p.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteProject(ctx, p.ID), store.ErrNotFound)

	// Its provider links went with it.
	projects, err := s.BrokerProjects(ctx, b.ID)
	must(t, err)
	equal(t, projects, []string{})
	// An agent cannot be created in a deleted project.
	wantErr(t, s.CreateAgent(ctx, &store.Agent{Slug: "late", ProjectID: p.ID}, nil), store.ErrNotFound)
}

func testProviders(t *testing.T, s store.Store) {
	ctx := t.Context()
	p1 := &store.Project{ID: "p1", Name: "p1"}
	p2 := &store.Project{ID: "p2", Name: "p2"}
	must(t, s.CreateProject(ctx, p1))
	must(t, s.CreateProject(ctx, p2))
	b1 := &store.Broker{ID: "b1", Name: "b1"}
	b2 := &store.Broker{ID: "b2", Name: "b2"}
	must(t, s.CreateBroker(ctx, b2))
	must(t, s.CreateBroker(ctx, b1))

	none, err := s.ProjectProviders(ctx, "p1")
	must(t, err)
	equal(t, none, []string{})

	must(t, s.LinkProvider(ctx, "p1", "b2"))
	must(t, s.LinkProvider(ctx, "p1", "b1"))
	must(t, s.LinkProvider(ctx, "p1", "b1")) // idempotent
	must(t, s.LinkProvider(ctx, "p2", "b1"))

	got, err := s.ProjectProviders(ctx, "p1")
	must(t, err)
	equal(t, got, []string{"b1", "b2"})
	got, err = s.BrokerProjects(ctx, "b1")
	must(t, err)
	equal(t, got, []string{"p1", "p2"})

	// A broker with whether it provides, by ID or by name, in one read.
	wantB2, err := s.GetBroker(ctx, "b2")
	must(t, err)
	for _, c := range []struct {
		ref, project string
		provides     bool
	}{{"b2", "p1", true}, {"b2", "p2", false}, {"b1", "p2", true}, {"b2", "missing", false}} {
		b, provides, err := s.GetBrokerForProject(ctx, c.ref, c.project)
		must(t, err)
		if b.ID != c.ref || provides != c.provides {
			t.Fatalf("GetBrokerForProject(%s, %s) = %s, %v; want %v", c.ref, c.project, b.ID, provides, c.provides)
		}
		if c.ref == "b2" {
			equal(t, b, wantB2)
		}
	}
	_, _, err = s.GetBrokerForProject(ctx, "missing", "p1")
	wantErr(t, err, store.ErrNotFound)

	wantErr(t, s.LinkProvider(ctx, "missing", "b1"), store.ErrNotFound)
	wantErr(t, s.LinkProvider(ctx, "p1", "missing"), store.ErrNotFound)

	must(t, s.UnlinkProvider(ctx, "p1", "b1"))
	wantErr(t, s.UnlinkProvider(ctx, "p1", "b1"), store.ErrNotFound)
	got, err = s.ProjectProviders(ctx, "p1")
	must(t, err)
	equal(t, got, []string{"b2"})
	got, err = s.BrokerProjects(ctx, "b1")
	must(t, err)
	equal(t, got, []string{"p2"})
}
