package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// testUpdateBrokerWith: read-modify-writes of one broker that change
// different fields (an admin's limit, a hello's runtime target) never
// lose each other's change, however they interleave; fn's error writes
// nothing; a gone broker is ErrNotFound.
func testUpdateBrokerWith(t *testing.T, s store.Store) {
	ctx := t.Context()
	b := &store.Broker{Name: "flat", Status: api.BrokerOnline, Secret: []byte{1}}
	must(t, s.CreateBroker(ctx, b))

	// Each kind of update counts in a field of its own: a write that
	// wrote back a record read before another's commit loses a count.
	const rounds = 20
	target := api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for range rounds {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.UpdateBrokerWith(ctx, b.ID, func(x *store.Broker) error {
				n := 1
				if x.Settings.MaxAgents != nil {
					n = *x.Settings.MaxAgents + 1
				}
				x.Settings.MaxAgents = &n
				return nil
			})
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := s.UpdateBrokerWith(ctx, b.ID, func(x *store.Broker) error {
				x.RuntimeTarget = &target
				x.Capabilities = append(x.Capabilities, "c")
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	got, err := s.GetBroker(ctx, b.ID)
	must(t, err)
	if got.Settings.MaxAgents == nil || *got.Settings.MaxAgents != rounds || len(got.Capabilities) != rounds || got.RuntimeTarget == nil {
		t.Fatalf("after %d concurrent updates of each field: maxAgents %v, %d capabilities, target %v: writes were lost",
			rounds, got.Settings.MaxAgents, len(got.Capabilities), got.RuntimeTarget)
	}

	refuse := errors.New("refused")
	_, err = s.UpdateBrokerWith(ctx, b.ID, func(x *store.Broker) error {
		x.Name, x.RuntimeTarget = "renamed", nil
		return refuse
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("fn's error: got %v", err)
	}
	after, err := s.GetBroker(ctx, b.ID)
	must(t, err)
	if after.Name != "flat" || after.RuntimeTarget == nil {
		t.Fatalf("a refused update wrote: %+v", after)
	}
	if _, err := s.UpdateBrokerWith(ctx, "no-such-broker", func(*store.Broker) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("gone broker: got %v, want ErrNotFound", err)
	}
}
