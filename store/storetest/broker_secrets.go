package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

// testBrokerSecrets: put, replace (keeping CreatedAt and CreatedBy), get,
// list (by name, no ciphertext) and delete, and the documented errors.
func testBrokerSecrets(t *testing.T, s store.Store) {
	ctx := t.Context()
	b, b2 := newBroker(t, s, "b"), newBroker(t, s, "b2")
	list := func(brokerID string) []*store.BrokerSecret {
		t.Helper()
		secs, err := s.ListBrokerSecrets(ctx, brokerID)
		must(t, err)
		return secs
	}
	equal(t, list(b.ID), []*store.BrokerSecret{})
	equal(t, list("no-such-broker"), []*store.BrokerSecret{})

	created := oddTime()
	kc := &store.BrokerSecret{BrokerID: b.ID, Name: "kubeconfig-b200", Ciphertext: []byte{0, 0xff, 'k', 0},
		CreatedBy: "user:admin", CreatedAt: created}
	must(t, s.PutBrokerSecret(ctx, kc))
	if kc.CreatedAt != norm(created) || kc.UpdatedAt.IsZero() || kc.UpdatedAt != norm(kc.UpdatedAt) {
		t.Fatalf("PutBrokerSecret did not fill in and normalise the times: %+v", kc)
	}
	got, err := s.GetBrokerSecret(ctx, b.ID, "kubeconfig-b200")
	must(t, err)
	equal(t, got, kc)

	// The same name on another broker is another secret.
	other := &store.BrokerSecret{BrokerID: b2.ID, Name: "kubeconfig-b200", Ciphertext: []byte("b2")}
	must(t, s.PutBrokerSecret(ctx, other))
	if other.CreatedAt.IsZero() || other.CreatedAt != other.UpdatedAt {
		t.Fatalf("new broker secret times: %+v", other)
	}

	// Replacing keeps CreatedAt and CreatedBy and moves UpdatedAt.
	time.Sleep(time.Millisecond) // UpdatedAt must move on even on a coarse clock
	repl := &store.BrokerSecret{BrokerID: b.ID, Name: "kubeconfig-b200", Ciphertext: []byte("rotated"),
		CreatedBy: "user:other", CreatedAt: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	must(t, s.PutBrokerSecret(ctx, repl))
	want := &store.BrokerSecret{BrokerID: b.ID, Name: "kubeconfig-b200", Ciphertext: []byte("rotated"),
		CreatedBy: "user:admin", CreatedAt: kc.CreatedAt, UpdatedAt: repl.UpdatedAt}
	equal(t, repl, want)
	if !repl.UpdatedAt.After(kc.UpdatedAt) {
		t.Fatalf("replace: UpdatedAt %v, want after %v", repl.UpdatedAt, kc.UpdatedAt)
	}
	got, err = s.GetBrokerSecret(ctx, b.ID, "kubeconfig-b200")
	must(t, err)
	equal(t, got, want)

	// Lists are sorted by name (bytewise) and carry no ciphertext.
	for _, name := range []string{"bastion-key", "Z", "a_lower"} {
		must(t, s.PutBrokerSecret(ctx, &store.BrokerSecret{BrokerID: b.ID, Name: name, Ciphertext: []byte("x")}))
	}
	secs := list(b.ID)
	equal(t, ids(secs, func(s *store.BrokerSecret) string { return s.Name }),
		[]string{"Z", "a_lower", "bastion-key", "kubeconfig-b200"})
	for _, sec := range secs {
		if sec.Ciphertext != nil || sec.BrokerID != b.ID {
			t.Fatalf("listed secret %+v: want broker %q and no ciphertext", sec, b.ID)
		}
	}
	wantList := *want
	wantList.Ciphertext = nil
	equal(t, secs[3], &wantList)

	// Refusals write nothing.
	wantErr(t, s.PutBrokerSecret(ctx, &store.BrokerSecret{BrokerID: "no-such-broker", Name: "k", Ciphertext: []byte("x")}),
		store.ErrNotFound)
	for _, bad := range []*store.BrokerSecret{{BrokerID: b.ID, Name: "", Ciphertext: []byte("x")},
		{BrokerID: b.ID, Name: "empty"}} {
		if err := s.PutBrokerSecret(ctx, bad); err == nil {
			t.Fatalf("PutBrokerSecret took %+v", bad)
		}
	}
	if n := len(list(b.ID)); n != 4 {
		t.Fatalf("refused puts wrote: %d secrets", n)
	}
	_, err = s.GetBrokerSecret(ctx, b.ID, "no-such")
	wantErr(t, err, store.ErrNotFound)

	must(t, s.DeleteBrokerSecret(ctx, b.ID, "Z"))
	wantErr(t, s.DeleteBrokerSecret(ctx, b.ID, "Z"), store.ErrNotFound)
	_, err = s.GetBrokerSecret(ctx, b.ID, "Z")
	wantErr(t, err, store.ErrNotFound)
	got, err = s.GetBrokerSecret(ctx, b2.ID, "kubeconfig-b200")
	must(t, err)
	equal(t, got, other)
}

// testDeleteBrokerSecrets: a broker's secrets go with it, forced or not;
// a refused deletion keeps them; a broker with the same name later does
// not inherit them.
func testDeleteBrokerSecrets(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	for _, force := range []bool{false, true} {
		b := newBroker(t, s, fmt.Sprintf("b-%v", force))
		keep := newBroker(t, s, fmt.Sprintf("keep-%v", force))
		for _, br := range []*store.Broker{b, keep} {
			must(t, s.PutBrokerSecret(ctx, &store.BrokerSecret{BrokerID: br.ID, Name: "kubeconfig", Ciphertext: []byte("x")}))
		}
		if !force {
			// An agent on the broker refuses the unforced deletion: the
			// secrets stay.
			a := newAgent(t, s, p.ID, "a", b.ID)
			wantErr(t, s.DeleteBroker(ctx, b.ID, false), store.ErrConflict)
			_, err := s.GetBrokerSecret(ctx, b.ID, "kubeconfig")
			must(t, err)
			must(t, s.DeleteAgent(ctx, a.ID))
		}
		must(t, s.DeleteBroker(ctx, b.ID, force))
		_, err := s.GetBrokerSecret(ctx, b.ID, "kubeconfig")
		wantErr(t, err, store.ErrNotFound)
		secs, err := s.ListBrokerSecrets(ctx, b.ID)
		must(t, err)
		equal(t, secs, []*store.BrokerSecret{})
		_, err = s.GetBrokerSecret(ctx, keep.ID, "kubeconfig")
		must(t, err)

		again := newBroker(t, s, b.Name)
		secs, err = s.ListBrokerSecrets(ctx, again.ID)
		must(t, err)
		equal(t, secs, []*store.BrokerSecret{})
	}
}

// testPutBrokerSecretDeleteBrokerRace: a secret put while its broker is
// deleted never outlives the broker.
func testPutBrokerSecretDeleteBrokerRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	for k := range 5 {
		b := newBroker(t, s, fmt.Sprintf("b%d", k))
		race(t, 9, nil, func(i int) error {
			if i == 0 {
				return s.DeleteBroker(ctx, b.ID, true)
			}
			err := s.PutBrokerSecret(ctx, &store.BrokerSecret{BrokerID: b.ID, Name: fmt.Sprintf("S%d", i), Ciphertext: []byte("x")})
			if errors.Is(err, store.ErrNotFound) {
				return nil // the broker was already gone
			}
			return err
		})
		secs, err := s.ListBrokerSecrets(ctx, b.ID)
		must(t, err)
		if len(secs) != 0 {
			t.Fatalf("broker deleted but %d of its secrets remain", len(secs))
		}
	}
}
