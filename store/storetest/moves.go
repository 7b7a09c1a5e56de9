package storetest

import (
	"reflect"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// testBrokerWorkspaceStorage: a broker's reported workspace storage is
// kept by UpdateBroker and UpdateBrokerWith and read back by every read;
// a broker that never reported one reads nil.
func testBrokerWorkspaceStorage(t *testing.T, s store.Store) {
	ctx := t.Context()
	b := newBroker(t, s, "b")
	got, err := s.GetBroker(ctx, b.ID)
	must(t, err)
	if got.WorkspaceStorage != nil {
		t.Fatalf("a new broker's storage is %+v, want nil", got.WorkspaceStorage)
	}
	want := &api.WorkspaceStorage{Type: "nfs", Server: "nfs.lan", Export: "/srv/scion", SubpathRoot: "ws",
		PVName: "pv-ws", ExportID: "0123456789abcdef0123456789abcdef", Healthy: true}
	_, err = s.UpdateBrokerWith(ctx, b.ID, func(b *store.Broker) error { b.WorkspaceStorage = want; return nil })
	must(t, err)
	got, err = s.GetBroker(ctx, b.Name)
	must(t, err)
	if !reflect.DeepEqual(got.WorkspaceStorage, want) {
		t.Fatalf("storage %+v, want %+v", got.WorkspaceStorage, want)
	}
	p := newProject(t, s, "p")
	got, _, err = s.GetBrokerForProject(ctx, b.ID, p.ID)
	must(t, err)
	list, _, _, err := s.ListBrokers(ctx, store.Page{})
	must(t, err)
	if !reflect.DeepEqual(got.WorkspaceStorage, want) || len(list) != 1 || !reflect.DeepEqual(list[0].WorkspaceStorage, want) {
		t.Fatalf("GetBrokerForProject %+v, ListBrokers %+v: want %+v", got.WorkspaceStorage, list, want)
	}
	got.WorkspaceStorage = &api.WorkspaceStorage{Type: "local"}
	must(t, s.UpdateBroker(ctx, got))
	got, err = s.GetBroker(ctx, b.ID)
	must(t, err)
	if got.WorkspaceStorage == nil || got.WorkspaceStorage.Type != "local" || got.WorkspaceStorage.ExportID != "" {
		t.Fatalf("after UpdateBroker: %+v, want local", got.WorkspaceStorage)
	}
}

// testAgentPlacement: an agent's workspace placement is written by create
// and update and read back; a new agent's is unknown.
func testAgentPlacement(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a := newAgent(t, s, p.ID, "a", b.ID)
	if a.WorkspacePlacement != api.PlacementUnknown {
		t.Fatalf("a new agent's placement is %q, want unknown", a.WorkspacePlacement)
	}
	a.WorkspacePlacement = api.PlacementExport
	must(t, s.UpdateAgent(ctx, a))
	got, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	if got.WorkspacePlacement != api.PlacementExport {
		t.Fatalf("placement %q, want %q", got.WorkspacePlacement, api.PlacementExport)
	}
	limit := 5
	got.WorkspacePlacement = api.PlacementLocal
	must(t, s.UpdateAgentWith(ctx, got, store.UpdateAgentOptions{ReserveLimit: &limit}))
	c := &store.Agent{Slug: "c", ProjectID: p.ID, BrokerID: b.ID, WorkspacePlacement: api.PlacementExport}
	must(t, s.CreateAgent(ctx, c, &limit))
	list, _, _, err := s.ListAgents(ctx, store.AgentFilter{ProjectID: p.ID}, store.Page{})
	must(t, err)
	want := map[string]string{"a": api.PlacementLocal, "c": api.PlacementExport}
	for _, x := range list {
		if x.WorkspacePlacement != want[x.Slug] {
			t.Errorf("agent %s placement %q, want %q", x.Slug, x.WorkspacePlacement, want[x.Slug])
		}
	}
}
