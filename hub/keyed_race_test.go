package hub_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
)

// staleKeyRead answers one GetIdempotencyRecord with "not found", as a
// Hub reads it just before another Hub over the same database commits
// the create with that key.
type staleKeyRead struct {
	store.Store
	stale atomic.Bool
}

func (s *staleKeyRead) GetIdempotencyRecord(ctx context.Context, caller, key string, now time.Time) (*store.IdempotencyRecord, error) {
	if s.stale.CompareAndSwap(true, false) {
		return nil, store.ErrNotFound
	}
	return s.Store.GetIdempotencyRecord(ctx, caller, key, now)
}

// TestKeyedCreateLosingTheClaimReplaysTheWinner: a keyed create that
// finds no record for its key, then loses the claim to a create with the
// same key that committed meanwhile (another Hub's), answers as the
// winner did (its 201, the same agent), not 409, and creates nothing.
func TestKeyedCreateLosingTheClaimReplaysTheWinner(t *testing.T) {
	var ws *staleKeyRead
	e := testenv.New(t, testenv.Options{Brokers: 1, WrapStore: func(s store.Store) store.Store {
		ws = &staleKeyRead{Store: s}
		return ws
	}})
	req := api.CreateAgentRequest{Name: "w", Project: "default", Command: []string{"x"}}
	key := client.NewIdempotencyKey()
	st, first := post(t, e, "/agents", key, req)
	if st != http.StatusCreated {
		t.Fatalf("first create: %d %s", st, first)
	}
	ws.stale.Store(true)
	st, second := post(t, e, "/agents", key, req)
	if st != http.StatusCreated || string(second) != string(first) {
		t.Fatalf("create that lost the key's claim: %d %s, want the winner's 201 %s", st, second, first)
	}
	list, err := e.Admin.ListAgents(context.Background(), client.AgentFilter{}, "", 0)
	if err != nil || list.Total != 1 {
		t.Fatalf("agents %+v (%v), want one", list, err)
	}
}
