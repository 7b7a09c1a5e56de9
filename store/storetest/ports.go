package storetest

import (
	"reflect"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// testAgentPorts: the requested ports and the assigned mappings survive
// every write path (insert, the status update that keeps the indexed
// keys, and the full update that changes them), and clearing the
// mappings (a stop) reads back as none.
func testAgentPorts(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a := &store.Agent{Slug: "web", ProjectID: p.ID, BrokerID: b.ID, Ports: []int{8080, 9090}}
	must(t, s.CreateAgent(ctx, a, nil))
	check := func(what string) {
		t.Helper()
		got, err := s.GetAgent(ctx, a.ID)
		must(t, err)
		if !reflect.DeepEqual(got.Ports, a.Ports) || !reflect.DeepEqual(got.PortMappings, a.PortMappings) {
			t.Fatalf("after %s: ports %v, mappings %v; want %v, %v", what, got.Ports, got.PortMappings, a.Ports, a.PortMappings)
		}
	}
	check("create")

	// A status update: same slug, project and broker.
	a.PortMappings = []api.PortMapping{{ContainerPort: 8080, HostPort: 31007, Protocol: "tcp"},
		{ContainerPort: 9090, HostPort: 31008, Protocol: "tcp"}}
	must(t, s.UpdateAgent(ctx, a))
	check("status update")

	// A stop gives the host ports back.
	a.PortMappings = nil
	must(t, s.UpdateAgent(ctx, a))
	check("clearing the mappings")

	// A change of the indexed keys takes the other statement.
	b2 := newBroker(t, s, "b2")
	a.BrokerID, a.Slug = b2.ID, "web-2"
	a.PortMappings = []api.PortMapping{{ContainerPort: 8080, HostPort: 32000}}
	must(t, s.UpdateAgent(ctx, a))
	check("key change")

	// Listing reads the same columns.
	items, _, _, err := s.ListAgents(ctx, store.AgentFilter{BrokerID: b2.ID}, store.Page{})
	must(t, err)
	if len(items) != 1 {
		t.Fatalf("ListAgents = %d items, want 1", len(items))
	}
	equal(t, items[0].PortMappings, a.PortMappings)
	equal(t, items[0].Ports, a.Ports)
}
