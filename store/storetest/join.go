package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

// testJoinBroker: a join consumes its token and creates the broker in one
// transaction, so a refused join (a taken name, or build's own refusal)
// leaves the token usable for the retry.
func testJoinBroker(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := oddTime()
	must(t, s.CreateBroker(ctx, &store.Broker{Name: "taken"}))
	must(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: []byte("j1"), Name: "gpu", CreatedBy: "admin", ExpiresAt: now.Add(time.Hour)}))

	named := func(name string) func(*store.JoinToken) (*store.Broker, error) {
		return func(*store.JoinToken) (*store.Broker, error) {
			return &store.Broker{Name: name, Secret: []byte("s"), Capabilities: []string{}}, nil
		}
	}
	// A taken name: refused, and the token is not spent.
	_, err := s.JoinBroker(ctx, []byte("j1"), now, named("taken"))
	wantErr(t, err, store.ErrAlreadyExists)
	// build's refusal: the same.
	refuse := errors.New("refused by build")
	_, err = s.JoinBroker(ctx, []byte("j1"), now, func(*store.JoinToken) (*store.Broker, error) { return nil, refuse })
	wantErr(t, err, refuse)

	// The retry works, and build saw the consumed token.
	var seen *store.JoinToken
	b, err := s.JoinBroker(ctx, []byte("j1"), now, func(jt *store.JoinToken) (*store.Broker, error) {
		seen = jt
		return named(jt.Name)(jt)
	})
	must(t, err)
	if seen == nil || seen.Name != "gpu" || seen.CreatedBy != "admin" || seen.UsedAt == nil || !seen.UsedAt.Equal(norm(now)) {
		t.Fatalf("build saw %+v, want the consumed token gpu/admin", seen)
	}
	if b.ID == "" || b.Name != "gpu" || b.CreatedAt.IsZero() {
		t.Fatalf("JoinBroker returned %+v", b)
	}
	got, err := s.GetBroker(ctx, "gpu")
	must(t, err)
	equal(t, got, b)

	// Spent now: refused without calling build.
	called := false
	build := func(*store.JoinToken) (*store.Broker, error) { called = true; return named("again")(nil) }
	_, err = s.JoinBroker(ctx, []byte("j1"), now, build)
	wantErr(t, err, store.ErrTokenUsed)
	_, err = s.JoinBroker(ctx, []byte("unknown"), now, build)
	wantErr(t, err, store.ErrNotFound)
	must(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: []byte("expired"), ExpiresAt: now}))
	_, err = s.JoinBroker(ctx, []byte("expired"), now, build)
	wantErr(t, err, store.ErrTokenUsed)
	if called {
		t.Fatal("build was called for an unusable token")
	}
	if _, err := s.GetBroker(ctx, "again"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused join created a broker: %v", err)
	}
}

// testJoinBrokerRace: joins racing with one token create one broker; joins
// racing for one name with their own tokens create one broker, and every
// loser's token is still usable.
func testJoinBrokerRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now()
	must(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: []byte("shared"), ExpiresAt: now.Add(time.Hour)}))
	won := race(t, 8, store.ErrTokenUsed, func(i int) error {
		_, err := s.JoinBroker(ctx, []byte("shared"), now, func(*store.JoinToken) (*store.Broker, error) {
			return &store.Broker{Name: fmt.Sprintf("shared-%d", i)}, nil
		})
		return err
	})
	if won != 1 {
		t.Fatalf("one token registered %d brokers, want 1", won)
	}

	const n = 8
	for i := range n {
		must(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: []byte(fmt.Sprintf("own-%d", i)), ExpiresAt: now.Add(time.Hour)}))
	}
	won = race(t, n, store.ErrAlreadyExists, func(i int) error {
		_, err := s.JoinBroker(ctx, []byte(fmt.Sprintf("own-%d", i)), now, func(*store.JoinToken) (*store.Broker, error) {
			return &store.Broker{Name: "contested"}, nil
		})
		return err
	})
	if won != 1 {
		t.Fatalf("%d joins registered the name, want 1", won)
	}
	unused := 0
	for i := range n {
		if _, err := s.ConsumeJoinToken(ctx, []byte(fmt.Sprintf("own-%d", i)), now); err == nil {
			unused++
		}
	}
	if unused != n-1 {
		t.Fatalf("%d tokens still usable after the race, want %d (the losers')", unused, n-1)
	}
}
