package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

// race runs fn(i) for i in [0, n) in n goroutines released together, and
// returns how many returned nil; errors other than allowed fail the test.
func race(t *testing.T, n int, allowed error, fn func(i int) error) int {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			err := fn(i)
			switch {
			case err == nil:
				ok.Add(1)
			case !errors.Is(err, allowed):
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return int(ok.Load())
}

// testReserveRace: 200 agents race for 50 slots.
func testReserveRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	agents := make([]*store.Agent, 200)
	for i := range agents {
		agents[i] = newAgent(t, s, p.ID, slug(i), b.ID)
	}
	won := race(t, len(agents), store.ErrQuota, func(i int) error {
		return s.Reserve(ctx, b.ID, agents[i].ID, 50)
	})
	if won != 50 {
		t.Fatalf("%d reservations succeeded, want exactly 50", won)
	}
	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	if n != 50 {
		t.Fatalf("CountReservations = %d, want 50", n)
	}
}

// testUpdateAgentReserveRace: 100 agent updates with their slots race for
// 20 slots; only the winners' updates are written.
func testUpdateAgentReserveRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	agents := make([]*store.Agent, 100)
	for i := range agents {
		agents[i] = newAgent(t, s, p.ID, slug(i), b.ID)
	}
	limit := 20
	won := race(t, len(agents), store.ErrQuota, func(i int) error {
		a := *agents[i]
		a.Delegator = "winner"
		return s.UpdateAgentWith(ctx, &a, store.UpdateAgentOptions{ReserveLimit: &limit})
	})
	if won != limit {
		t.Fatalf("%d updates succeeded, want exactly %d", won, limit)
	}
	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	reserved, err := s.ReservedAgents(ctx, b.ID)
	must(t, err)
	written := 0
	for _, a := range agents {
		got, err := s.GetAgent(ctx, a.ID)
		must(t, err)
		if got.Delegator == "winner" {
			written++
			if !slices.Contains(reserved, a.ID) {
				t.Fatalf("agent %s written without its slot", a.ID)
			}
		}
	}
	if n != limit || written != limit {
		t.Fatalf("%d reservations and %d agents written, want %d of each", n, written, limit)
	}
}

// testCreateAgentReserveRace: 100 creates race for 20 slots; only the
// winners' agents exist.
func testCreateAgentReserveRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	limit := 20
	won := race(t, 100, store.ErrQuota, func(i int) error {
		return s.CreateAgent(ctx, &store.Agent{Slug: slug(i), ProjectID: p.ID, BrokerID: b.ID}, &limit)
	})
	if won != limit {
		t.Fatalf("%d creates succeeded, want exactly %d", won, limit)
	}
	_, _, total, err := s.ListAgents(ctx, store.AgentFilter{BrokerID: b.ID}, store.Page{})
	must(t, err)
	n, err := s.CountReservations(ctx, b.ID)
	must(t, err)
	if total != limit || n != limit {
		t.Fatalf("%d agents and %d reservations, want %d of each", total, n, limit)
	}
}

// testConsumeJoinTokenRace: of several consumers of one token exactly one
// wins, for each of a few tokens.
func testConsumeJoinTokenRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now()
	for k := range 5 {
		hash := []byte(fmt.Sprintf("race-%d", k))
		must(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: hash, ExpiresAt: now.Add(time.Hour)}))
		won := race(t, 8, store.ErrTokenUsed, func(int) error {
			_, err := s.ConsumeJoinToken(ctx, hash, now)
			return err
		})
		if won != 1 {
			t.Fatalf("token %d consumed %d times, want once", k, won)
		}
	}
}

// testUpdateAgentRace: writers doing read-modify-write with retry on
// ErrConflict lose no update.
func testUpdateAgentRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	a := newAgent(t, s, p.ID, "counter", "")
	const writers, each = 8, 10
	var conflicts atomic.Int64
	race(t, writers, nil, func(int) error {
		for range each {
			for {
				cur, err := s.GetAgent(ctx, a.ID)
				if err != nil {
					return err
				}
				cur.Generation++
				err = s.UpdateAgent(ctx, cur)
				if errors.Is(err, store.ErrConflict) {
					conflicts.Add(1)
					continue
				}
				if err != nil {
					return err
				}
				break
			}
		}
		return nil
	})
	got, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	if got.Generation != writers*each || got.Version != writers*each+1 {
		t.Fatalf("Generation %d Version %d, want %d and %d (lost updates)", got.Generation, got.Version, writers*each, writers*each+1)
	}
	t.Logf("%d conflicts retried", conflicts.Load())
}

// testDeleteProjectRace: a project deleted while agents are created in it
// ends either deleted with no agents or present with every agent whose
// create succeeded.
func testDeleteProjectRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	for k := range 5 {
		p := newProject(t, s, fmt.Sprintf("p%d", k))
		var created atomic.Int64
		var deleted atomic.Bool
		race(t, 9, nil, func(i int) error {
			if i == 0 {
				err := s.DeleteProject(ctx, p.ID)
				if err == nil {
					deleted.Store(true)
				}
				if errors.Is(err, store.ErrConflict) {
					return nil
				}
				return err
			}
			err := s.CreateAgent(ctx, &store.Agent{Slug: slug(i), ProjectID: p.ID}, nil)
			if err == nil {
				created.Add(1)
			}
			if errors.Is(err, store.ErrNotFound) {
				return nil // the project was already gone
			}
			return err
		})
		_, _, total, err := s.ListAgents(ctx, store.AgentFilter{ProjectID: p.ID}, store.Page{})
		must(t, err)
		if total != int(created.Load()) {
			t.Fatalf("%d agents listed, %d creates succeeded", total, created.Load())
		}
		if deleted.Load() && total != 0 {
			t.Fatalf("project deleted but %d agents remain in it", total)
		}
	}
}
