package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
)

// deregisterAtReserve deregisters (with force) the broker an armed slot
// is asked on just before the store takes it: a deregistration that lands
// between an action's checks and its commit.
type deregisterAtReserve struct {
	store.Store
	armed atomic.Bool
}

func (s *deregisterAtReserve) gone(ctx context.Context, brokerID string) {
	if s.armed.CompareAndSwap(true, false) {
		if err := s.Store.DeleteBroker(ctx, brokerID, true); err != nil {
			panic(err)
		}
	}
}

func (s *deregisterAtReserve) Reserve(ctx context.Context, brokerID, agentID string, limit int) error {
	s.gone(ctx, brokerID)
	return s.Store.Reserve(ctx, brokerID, agentID, limit)
}

func (s *deregisterAtReserve) UpdateAgentWith(ctx context.Context, a *store.Agent, o store.UpdateAgentOptions) error {
	if o.ReserveLimit != nil {
		s.gone(ctx, a.BrokerID)
	}
	return s.Store.UpdateAgentWith(ctx, a, o)
}

// TestStartWhoseBrokerIsDeregisteredAtTheCommit: a start whose broker is
// deregistered with force after its checks and before its slot is taken
// is answered as plan.Reach answers a broker no longer registered (409
// runtime_broker_missing), not as an unknown resource.
func TestStartWhoseBrokerIsDeregisteredAtTheCommit(t *testing.T) {
	var ws *deregisterAtReserve
	e := testenv.New(t, testenv.Options{Brokers: 1, WrapStore: func(s store.Store) store.Store {
		ws = &deregisterAtReserve{Store: s}
		return ws
	}})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	ws.armed.Store(true)
	_, err := e.Admin.AgentAction(ctx, "w", "default", "start")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != api.CodeBrokerMissing {
		t.Fatalf("start: %v (%+v), want 409 %s", err, ae, api.CodeBrokerMissing)
	}
}

// TestKeyedRetryWhoseBrokerIsDeregisteredAtTheReserve: the keyed retry of
// a create the broker refused sends it again; when the broker is
// deregistered between the retry's checks and its slot, the answer is 409
// runtime_broker_missing, as for a broker found gone.
func TestKeyedRetryWhoseBrokerIsDeregisteredAtTheReserve(t *testing.T) {
	var ws *deregisterAtReserve
	e := testenv.New(t, testenv.Options{Brokers: 1, WrapStore: func(s store.Store) store.Store {
		ws = &deregisterAtReserve{Store: s}
		return ws
	}})
	e.Brokers()[0].Runtime.FailNext("Create", errors.New("disk full"))
	req := api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}}
	key := client.NewIdempotencyKey()
	if st, body := post(t, e, "/agents", key, req); st != http.StatusBadGateway {
		t.Fatalf("first create: %d %s, want 502", st, body)
	}
	ws.armed.Store(true)
	st, body := post(t, e, "/agents", key, req)
	var eb api.ErrorBody
	if st != http.StatusConflict || json.Unmarshal(body, &eb) != nil || eb.Error.Code != api.CodeBrokerMissing {
		t.Fatalf("keyed retry: %d %s, want 409 %s", st, body, api.CodeBrokerMissing)
	}
}
