package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

// testAgentTokenGeneration: RenewAgentToken moves the agent's token
// generation by one when the caller's is current, records the renewal's
// second, and leaves the agent's Version (and its other fields) alone; a
// stale generation is ErrConflict, a missing agent ErrNotFound.
func testAgentTokenGeneration(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	a := newAgent(t, s, p.ID, "a", "")
	if a.TokenGeneration != 0 || !a.TokenRenewedAt.IsZero() {
		t.Fatalf("a new agent's token generation %d, renewed %v", a.TokenGeneration, a.TokenRenewedAt)
	}
	at := time.Unix(1_700_000_000, 0).UTC()
	must(t, s.RenewAgentToken(ctx, a.ID, 0, at))
	got, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	if got.TokenGeneration != 1 || !got.TokenRenewedAt.Equal(at) || got.Version != a.Version {
		t.Fatalf("after a renewal: generation %d, renewed %v, version %d (was %d)", got.TokenGeneration, got.TokenRenewedAt, got.Version, a.Version)
	}
	wantErr(t, s.RenewAgentToken(ctx, a.ID, 0, at.Add(time.Second)), store.ErrConflict)
	wantErr(t, s.RenewAgentToken(ctx, "missing", 0, at), store.ErrNotFound)
	// An UpdateAgent with a copy read before the renewal keeps it.
	a.StatusMessage = "x"
	must(t, s.UpdateAgent(ctx, a))
	got, err = s.GetAgent(ctx, a.ID)
	must(t, err)
	if got.TokenGeneration != 1 || got.StatusMessage != "x" {
		t.Fatalf("an update undid the renewal: generation %d", got.TokenGeneration)
	}
	// Of renewals racing from one generation exactly one succeeds.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.RenewAgentToken(ctx, a.ID, 1, at); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("a racing write: %v, want ErrConflict", err)
			}
		}()
	}
	wg.Wait()
	got, err = s.GetAgent(ctx, a.ID)
	must(t, err)
	if ok != 1 || got.TokenGeneration != 2 {
		t.Fatalf("%d of 8 racing renewals succeeded, generation %d", ok, got.TokenGeneration)
	}
}

// testSettingVersions: a setting's version is 0 while unset and moves on
// with every write; PutSettingIf writes only at the version given (0: not
// yet set), and of writers racing at one version exactly one wins.
func testSettingVersions(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, v, err := s.GetSettingVersion(ctx, "k")
	wantErr(t, err, store.ErrNotFound)
	equal(t, v, int64(0))
	_, err = s.PutSettingIf(ctx, "k", []byte("a"), 1)
	wantErr(t, err, store.ErrConflict)
	v, err = s.PutSettingIf(ctx, "k", []byte("a"), 0)
	must(t, err)
	equal(t, v, int64(1))
	_, err = s.PutSettingIf(ctx, "k", []byte("b"), 0)
	wantErr(t, err, store.ErrConflict)
	b, v, err := s.GetSettingVersion(ctx, "k")
	must(t, err)
	equal(t, string(b), "a")
	equal(t, v, int64(1))
	// An unconditional write moves the version on too.
	must(t, s.PutSetting(ctx, "k", []byte("c")))
	_, err = s.PutSettingIf(ctx, "k", []byte("d"), 1)
	wantErr(t, err, store.ErrConflict)
	b, v, err = s.GetSettingVersion(ctx, "k")
	must(t, err)
	equal(t, string(b), "c")
	equal(t, v, int64(2))
	// GetSetting reads what the versioned writes wrote.
	v, err = s.PutSettingIf(ctx, "k", []byte("e"), 2)
	must(t, err)
	equal(t, v, int64(3))
	b, err = s.GetSetting(ctx, "k")
	must(t, err)
	equal(t, string(b), "e")

	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.PutSettingIf(ctx, "k", []byte("f"), 3); err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("a racing write: %v, want ErrConflict", err)
			}
		}()
	}
	wg.Wait()
	_, v, err = s.GetSettingVersion(ctx, "k")
	must(t, err)
	if won != 1 || v != 4 {
		t.Fatalf("%d of 8 racing writes at one version won; version %d", won, v)
	}
}
