package hub_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
)

// deregisterAtCreate deregisters (with force) an armed create's broker
// just before the store inserts the agent.
type deregisterAtCreate struct {
	store.Store
	armed atomic.Bool
}

func (s *deregisterAtCreate) CreateAgentWith(ctx context.Context, a *store.Agent, o store.CreateAgentOptions) (bool, error) {
	if s.armed.CompareAndSwap(true, false) {
		if err := s.Store.DeleteBroker(ctx, a.BrokerID, true); err != nil {
			panic(err)
		}
	}
	return s.Store.CreateAgentWith(ctx, a, o)
}

// TestCreateWhoseBrokerIsDeregisteredAtTheInsert: a starting create
// whose broker is deregistered after placement chose it and before its
// slot is taken creates nothing and is answered as a create naming an
// unknown broker (404 runtime_broker_not_found), not as if the agent were
// unknown.
func TestCreateWhoseBrokerIsDeregisteredAtTheInsert(t *testing.T) {
	var ws *deregisterAtCreate
	e := testenv.New(t, testenv.Options{Brokers: 1, WrapStore: func(s store.Store) store.Store {
		ws = &deregisterAtCreate{Store: s}
		return ws
	}})
	ctx := context.Background()
	ws.armed.Store(true)
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != api.CodeBrokerNotFound {
		t.Errorf("create: %v (%+v), want 404 %s", err, ae, api.CodeBrokerNotFound)
	}
	if list, err := e.Admin.ListAgents(ctx, client.AgentFilter{}, "", 0); err != nil || list.Total != 0 {
		t.Errorf("agents %+v (%v), want none", list, err)
	}
}

// TestNonStartingCreateWhoseBrokerIsDeregisteredAtTheInsert: a create
// without start (it takes no slot) whose broker is deregistered after
// placement chose it and before the store inserts the agent creates
// nothing and is answered 404 runtime_broker_not_found, as the starting
// create is: the store checks the broker in the create's transaction.
func TestNonStartingCreateWhoseBrokerIsDeregisteredAtTheInsert(t *testing.T) {
	var ws *deregisterAtCreate
	e := testenv.New(t, testenv.Options{Brokers: 1, WrapStore: func(s store.Store) store.Store {
		ws = &deregisterAtCreate{Store: s}
		return ws
	}})
	ctx := context.Background()
	ws.armed.Store(true)
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Command: []string{"x"}})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != api.CodeBrokerNotFound {
		t.Errorf("create: %v (%+v), want 404 %s", err, ae, api.CodeBrokerNotFound)
	}
	if ws.armed.Load() {
		t.Fatal("the create did not reach the store")
	}
	if list, err := e.Admin.ListAgents(ctx, client.AgentFilter{}, "", 0); err != nil || list.Total != 0 {
		t.Errorf("agents %+v (%v), want none", list, err)
	}
}
