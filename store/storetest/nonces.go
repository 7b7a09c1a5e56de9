package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

// testBrokerNonces: a nonce is used once per broker until it expires,
// then it may be used again; pruning removes exactly the expired ones;
// an unknown broker is ErrNotFound; deleting a broker drops its nonces.
func testBrokerNonces(t *testing.T, s store.Store) {
	ctx := t.Context()
	b := newBroker(t, s, "nb")
	other := newBroker(t, s, "nb2")
	now := norm(time.Now())
	exp := now.Add(5 * time.Minute)

	must(t, s.UseNonce(ctx, b.ID, "n1", now, exp))
	wantErr(t, s.UseNonce(ctx, b.ID, "n1", now.Add(time.Minute), exp.Add(time.Minute)), store.ErrAlreadyExists)
	// Another broker's nonce space is its own.
	must(t, s.UseNonce(ctx, other.ID, "n1", now, exp))
	wantErr(t, s.UseNonce(ctx, "no-such-broker", "n1", now, exp), store.ErrNotFound)
	// Expired: usable again (the timestamp check refuses a replay then).
	must(t, s.UseNonce(ctx, b.ID, "n1", exp, exp.Add(5*time.Minute)))
	wantErr(t, s.UseNonce(ctx, b.ID, "n1", exp.Add(time.Second), exp.Add(6*time.Minute)), store.ErrAlreadyExists)

	must(t, s.UseNonce(ctx, b.ID, "short", now, now.Add(time.Second)))
	n, err := s.PruneNonces(ctx, now.Add(time.Second))
	must(t, err)
	if n != 1 {
		t.Fatalf("pruned %d nonces, want 1 (the expired one)", n)
	}
	wantErr(t, s.UseNonce(ctx, other.ID, "n1", now.Add(time.Second), exp), store.ErrAlreadyExists)
	must(t, s.UseNonce(ctx, b.ID, "short", now.Add(time.Second), exp))

	must(t, s.DeleteBroker(ctx, other.ID, true))
	n, err = s.PruneNonces(ctx, exp.Add(time.Hour))
	must(t, err)
	if n != 2 { // b's n1 and short; other's n1 went with its broker
		t.Fatalf("pruned %d nonces after deleting a broker, want 2", n)
	}
}

// testUseNonceRace: of many concurrent uses of one nonce exactly one wins.
func testUseNonceRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	b := newBroker(t, s, "race")
	now := norm(time.Now())
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.UseNonce(ctx, b.ID, "same", now, now.Add(time.Minute))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrAlreadyExists):
				lost++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || lost != 15 {
		t.Fatalf("%d uses won, %d refused; want 1 and 15", won, lost)
	}
}
