package docker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/scion-go/scion/runtime/docker"
)

// TestEnsureNetworkConcurrent: brokers starting at once on an engine
// without their network all ensure it. Each gets a network that works by
// the ID it is given, with a gateway, and a broker starting later gets the
// oldest of the name. On this engine (API 1.41) such brokers used to make
// a network each under one name and then fail on it ("network
// scion-agents is ambiguous"); how often they now agree on one, leaving
// one of the name, is measured.
func TestEnsureNetworkConcurrent(t *testing.T) {
	needEngine(t)
	name := testPrefix + "-net"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list := func() []network.Summary {
		t.Helper()
		nets, err := engine.NetworkList(context.Background(), network.ListOptions{Filters: filters.NewArgs(filters.Arg("name", name))})
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(nets, func(n network.Summary) bool { return n.Name != name })
	}
	removeAll := func() {
		for _, n := range list() {
			_ = engine.NetworkRemove(context.Background(), n.ID)
		}
	}
	t.Cleanup(removeAll)
	const rounds, brokers = 5, 3
	agreed := 0
	for round := range rounds {
		var wg sync.WaitGroup
		ids, gws, errs := make([]string, brokers), make([]string, brokers), make([]error, brokers)
		for i := range brokers {
			wg.Go(func() {
				cl, err := docker.NewClient("") // a client each, like separate processes
				if err != nil {
					errs[i] = err
					return
				}
				defer cl.Close()
				ids[i], gws[i], errs[i] = docker.EnsureNetwork(ctx, cl, name)
			})
		}
		wg.Wait()
		for i := range brokers {
			if errs[i] != nil {
				t.Fatalf("round %d: broker %d: %v", round, i, errs[i])
			}
			n, err := engine.NetworkInspect(ctx, ids[i], network.InspectOptions{})
			if err != nil || n.Name != name || len(n.IPAM.Config) == 0 || n.IPAM.Config[0].Gateway != gws[i] || gws[i] == "" {
				t.Fatalf("round %d: broker %d got network %s, gateway %q; the engine has %+v (%v)", round, i, ids[i], gws[i], n.IPAM.Config, err)
			}
		}
		left := list()
		if len(slices.Compact(slices.Sorted(slices.Values(ids)))) == 1 && len(left) == 1 {
			agreed++
		}
		oldest := slices.MinFunc(left, func(a, b network.Summary) int { return a.Created.Compare(b.Created) })
		if id, _, err := docker.EnsureNetwork(ctx, engine, name); err != nil || id != oldest.ID {
			t.Fatalf("round %d: a later broker got %s (%v), want the oldest of the name, %s", round, id, err, oldest.ID)
		}
		removeAll()
	}
	t.Logf("MEASURED: %d brokers ensuring one network at once agreed on one, leaving one of the name, in %d of %d rounds", brokers, agreed, rounds)
}
