package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

func testSecrets(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	p2 := newProject(t, s, "p2")
	list := func(projectID string) []*store.Secret {
		t.Helper()
		secs, err := s.ListSecrets(ctx, projectID)
		must(t, err)
		return secs
	}
	equal(t, list(p.ID), []*store.Secret{})
	equal(t, list(""), []*store.Secret{})

	// Bytes of every value survive, NUL and invalid UTF-8 included.
	created := oddTime()
	tok := &store.Secret{ProjectID: p.ID, Name: "GITHUB_TOKEN", Ciphertext: []byte{0, 0xff, 'c', 0, 't'},
		CreatedBy: "user:u1", CreatedAt: created}
	must(t, s.PutSecret(ctx, tok))
	if tok.CreatedAt != norm(created) || tok.UpdatedAt.IsZero() || tok.UpdatedAt != norm(tok.UpdatedAt) {
		t.Fatalf("PutSecret did not fill in and normalise the times: %+v", tok)
	}
	got, err := s.GetSecret(ctx, p.ID, "GITHUB_TOKEN")
	must(t, err)
	equal(t, got, tok)

	// A zero CreatedAt is now.
	npm := &store.Secret{ProjectID: p.ID, Name: "NPM_TOKEN", Ciphertext: []byte("npm"), CreatedBy: "user:u2"}
	must(t, s.PutSecret(ctx, npm))
	if npm.CreatedAt.IsZero() || npm.CreatedAt != npm.UpdatedAt {
		t.Fatalf("new secret times: %+v", npm)
	}
	// The same name in another project and hub-wide are other secrets.
	other := &store.Secret{ProjectID: p2.ID, Name: "GITHUB_TOKEN", Ciphertext: []byte("p2")}
	must(t, s.PutSecret(ctx, other))
	hub := &store.Secret{Name: "GITHUB_TOKEN", Ciphertext: []byte("hub"), CreatedBy: "user:admin"}
	must(t, s.PutSecret(ctx, hub))
	got, err = s.GetSecret(ctx, "", "GITHUB_TOKEN")
	must(t, err)
	equal(t, got, hub)

	// Replacing keeps CreatedAt and CreatedBy and moves UpdatedAt.
	repl := &store.Secret{ProjectID: p.ID, Name: "GITHUB_TOKEN", Ciphertext: []byte("rotated"), CreatedBy: "user:u3",
		CreatedAt: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	time.Sleep(time.Millisecond) // UpdatedAt must move on even on a coarse clock
	must(t, s.PutSecret(ctx, repl))
	want := &store.Secret{ProjectID: p.ID, Name: "GITHUB_TOKEN", Ciphertext: []byte("rotated"), CreatedBy: "user:u1",
		CreatedAt: tok.CreatedAt, UpdatedAt: repl.UpdatedAt}
	equal(t, repl, want)
	if !repl.UpdatedAt.After(tok.UpdatedAt) {
		t.Fatalf("replace: UpdatedAt %v, want after %v", repl.UpdatedAt, tok.UpdatedAt)
	}
	got, err = s.GetSecret(ctx, p.ID, "GITHUB_TOKEN")
	must(t, err)
	equal(t, got, want)

	// Lists are sorted by name (bytewise) and carry no ciphertext.
	must(t, s.PutSecret(ctx, &store.Secret{ProjectID: p.ID, Name: "AWS_KEY", Ciphertext: []byte("aws")}))
	must(t, s.PutSecret(ctx, &store.Secret{ProjectID: p.ID, Name: "aws_lower", Ciphertext: []byte("aws")}))
	secs := list(p.ID)
	names := ids(secs, func(s *store.Secret) string { return s.Name })
	equal(t, names, []string{"AWS_KEY", "GITHUB_TOKEN", "NPM_TOKEN", "aws_lower"})
	for _, sec := range secs {
		if sec.Ciphertext != nil || sec.ProjectID != p.ID {
			t.Fatalf("listed secret %+v: want project %q and no ciphertext", sec, p.ID)
		}
	}
	wantList := *want
	wantList.Ciphertext = nil
	equal(t, secs[1], &wantList)
	hubList := *hub
	hubList.Ciphertext = nil
	equal(t, list(""), []*store.Secret{&hubList})
	equal(t, len(list(p2.ID)), 1)

	// Not found.
	for _, q := range [][2]string{{p.ID, "MISSING"}, {p2.ID, "NPM_TOKEN"}, {"", "NPM_TOKEN"}, {"missing", "GITHUB_TOKEN"}} {
		_, err := s.GetSecret(ctx, q[0], q[1])
		wantErr(t, err, store.ErrNotFound)
	}

	// A project secret needs its project; a name and a value are required.
	bad := &store.Secret{ProjectID: "missing", Name: "X", Ciphertext: []byte("x")}
	wantErr(t, s.PutSecret(ctx, bad), store.ErrNotFound)
	if !bad.CreatedAt.IsZero() || !bad.UpdatedAt.IsZero() {
		t.Fatalf("failed put modified its argument: %+v", bad)
	}
	if err := s.PutSecret(ctx, &store.Secret{ProjectID: p.ID, Ciphertext: []byte("x")}); err == nil {
		t.Fatal("PutSecret accepted an empty name")
	}
	if err := s.PutSecret(ctx, &store.Secret{ProjectID: p.ID, Name: "EMPTY"}); err == nil {
		t.Fatal("PutSecret accepted an empty ciphertext")
	}

	// Delete.
	must(t, s.DeleteSecret(ctx, p.ID, "NPM_TOKEN"))
	_, err = s.GetSecret(ctx, p.ID, "NPM_TOKEN")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteSecret(ctx, p.ID, "NPM_TOKEN"), store.ErrNotFound)
	wantErr(t, s.DeleteSecret(ctx, "", "NPM_TOKEN"), store.ErrNotFound)
	must(t, s.DeleteSecret(ctx, "", "GITHUB_TOKEN"))
	equal(t, list(""), []*store.Secret{})
	// ... and only that one.
	got, err = s.GetSecret(ctx, p2.ID, "GITHUB_TOKEN")
	must(t, err)
	equal(t, got, other)
	// A deleted name can be put again, as a new secret.
	again := &store.Secret{ProjectID: p.ID, Name: "NPM_TOKEN", Ciphertext: []byte("again"), CreatedBy: "user:u4"}
	must(t, s.PutSecret(ctx, again))
	got, err = s.GetSecret(ctx, p.ID, "NPM_TOKEN")
	must(t, err)
	equal(t, got, again)
}

// testDeleteProjectSecrets: a project's secrets go with it, and a new
// project of the same name does not inherit them; other projects' and
// hub-wide secrets stay.
func testDeleteProjectSecrets(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	keep := newProject(t, s, "keep")
	for _, sec := range []*store.Secret{
		{ProjectID: p.ID, Name: "A", Ciphertext: []byte("a")},
		{ProjectID: p.ID, Name: "B", Ciphertext: []byte("b")},
		{ProjectID: keep.ID, Name: "A", Ciphertext: []byte("keep")},
		{Name: "A", Ciphertext: []byte("hub")},
	} {
		must(t, s.PutSecret(ctx, sec))
	}
	a := newAgent(t, s, p.ID, "a", "")
	// A refused delete keeps them.
	wantErr(t, s.DeleteProject(ctx, p.ID), store.ErrConflict)
	if secs, err := s.ListSecrets(ctx, p.ID); err != nil || len(secs) != 2 {
		t.Fatalf("after a refused delete: %d secrets, %v; want 2", len(secs), err)
	}
	must(t, s.DeleteAgent(ctx, a.ID))
	must(t, s.DeleteProject(ctx, p.ID))

	secs, err := s.ListSecrets(ctx, p.ID)
	must(t, err)
	equal(t, secs, []*store.Secret{})
	_, err = s.GetSecret(ctx, p.ID, "A")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.PutSecret(ctx, &store.Secret{ProjectID: p.ID, Name: "C", Ciphertext: []byte("c")}), store.ErrNotFound)
	for _, q := range []string{keep.ID, ""} {
		if _, err := s.GetSecret(ctx, q, "A"); err != nil {
			t.Fatalf("secret A of %q: %v", q, err)
		}
	}
	// Recreated with the same ID, the project starts with no secrets.
	must(t, s.CreateProject(ctx, &store.Project{ID: p.ID, Name: "p"}))
	secs, err = s.ListSecrets(ctx, p.ID)
	must(t, err)
	equal(t, secs, []*store.Secret{})
}

// testPutSecretDeleteProjectRace: secrets put while their project is
// deleted either fail with ErrNotFound or are deleted with it; none
// outlives the project.
func testPutSecretDeleteProjectRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	for k := range 5 {
		p := newProject(t, s, fmt.Sprintf("p%d", k))
		var put atomic.Int64
		race(t, 9, nil, func(i int) error {
			if i == 0 {
				return s.DeleteProject(ctx, p.ID)
			}
			err := s.PutSecret(ctx, &store.Secret{ProjectID: p.ID, Name: fmt.Sprintf("S%d", i), Ciphertext: []byte("x")})
			if err == nil {
				put.Add(1)
			}
			if errors.Is(err, store.ErrNotFound) {
				return nil // the project was already gone
			}
			return err
		})
		secs, err := s.ListSecrets(ctx, p.ID)
		must(t, err)
		if len(secs) != 0 {
			t.Fatalf("project deleted but %d of its secrets remain (%d puts succeeded)", len(secs), put.Load())
		}
	}
}
