package storetest

import (
	"errors"
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

// testMoveRecords: a move's record is written and read back; one move of
// an agent runs at a time; an ended move is not written again; a move of
// an agent that is gone is refused, and its records go with the agent.
func testMoveRecords(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b1, b2 := newBroker(t, s, "b1"), newBroker(t, s, "b2")
	a := newAgent(t, s, p.ID, "a", b1.ID)
	m := &store.Move{AgentID: a.ID, SourceBrokerID: b1.ID, TargetBrokerID: b2.ID, Step: "accepted",
		Handoff: "carry on", Previous: []byte(`{"image":"x"}`), CreatedBy: "user:u1"}
	must(t, s.CreateMove(ctx, m))
	if m.ID == "" || m.CreatedAt.IsZero() {
		t.Fatalf("CreateMove left %+v without an ID or time", m)
	}
	second := &store.Move{AgentID: a.ID, SourceBrokerID: b1.ID, TargetBrokerID: b2.ID, Step: "accepted"}
	if err := s.CreateMove(ctx, second); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("a second running move: %v, want ErrAlreadyExists", err)
	}
	if err := s.CreateMove(ctx, &store.Move{AgentID: "nope", Step: "accepted"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a move of no agent: %v, want ErrNotFound", err)
	}
	m.Step, m.SourceCleanup = "stopped", ""
	must(t, s.UpdateMove(ctx, m))
	got, err := s.GetMove(ctx, m.ID)
	must(t, err)
	if got.Step != "stopped" || got.Handoff != "carry on" || string(got.Previous) != `{"image": "x"}` && string(got.Previous) != `{"image":"x"}` {
		t.Fatalf("read back %+v", got)
	}
	running, err := s.RunningMoves(ctx)
	must(t, err)
	if len(running) != 1 || running[0].ID != m.ID {
		t.Fatalf("running moves %+v, want the one", running)
	}
	m.Outcome, m.SourceCleanup, m.Message = "failed", "skipped:interrupted", "reincarnation failed: x"
	must(t, s.UpdateMove(ctx, m))
	m.Outcome, m.Step = "", "assigned"
	if err := s.UpdateMove(ctx, m); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("writing an ended move: %v, want ErrConflict", err)
	}
	if running, _ = s.RunningMoves(ctx); len(running) != 0 {
		t.Fatalf("running moves after the end: %+v", running)
	}
	must(t, s.CreateMove(ctx, second)) // the next move may start
	list, err := s.ListMoves(ctx, a.ID)
	must(t, err)
	if len(list) != 2 || list[0].ID != second.ID || list[1].Outcome != "failed" || list[1].SourceCleanup != "skipped:interrupted" {
		t.Fatalf("moves %+v, want the second, then the failed first", list)
	}
	must(t, s.DeleteAgent(ctx, a.ID))
	if _, err := s.GetMove(ctx, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted agent's move: %v, want ErrNotFound", err)
	}
}

// testMoveReservation: UpdateAgentWith moves an agent's slot to its new
// broker under that broker's limit, linking it to the project, in one
// transaction; a full target writes nothing (the agent stays where it
// was, its slot too); ReleaseReservation puts the agent back with no
// slot.
func testMoveReservation(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	src, dst := newBroker(t, s, "src"), newBroker(t, s, "dst")
	a := newAgent(t, s, p.ID, "a", src.ID)
	must(t, s.Reserve(ctx, src.ID, a.ID, 0))
	other := newAgent(t, s, p.ID, "o", dst.ID)
	must(t, s.Reserve(ctx, dst.ID, other.ID, 0))

	moved := *a
	moved.BrokerID = dst.ID
	one := 1
	err := s.UpdateAgentWith(ctx, &moved, store.UpdateAgentOptions{ReserveLimit: &one, MoveReservation: true, LinkProvider: true})
	if !errors.Is(err, store.ErrQuota) {
		t.Fatalf("a move to a full broker: %v, want ErrQuota", err)
	}
	got, err := s.GetAgent(ctx, a.ID)
	must(t, err)
	srcHeld, _ := s.ReservedAgents(ctx, src.ID)
	if got.BrokerID != src.ID || len(srcHeld) != 1 {
		t.Fatalf("after a refused move: broker %s, source slots %v; want it untouched", got.BrokerID, srcHeld)
	}
	if _, serves, err := s.GetBrokerForProject(ctx, dst.ID, p.ID); err != nil || serves {
		t.Fatalf("a refused move linked the target (serves %v, %v)", serves, err)
	}

	two := 2
	moved = *got
	moved.BrokerID = dst.ID
	must(t, s.UpdateAgentWith(ctx, &moved, store.UpdateAgentOptions{ReserveLimit: &two, MoveReservation: true, LinkProvider: true}))
	srcHeld, _ = s.ReservedAgents(ctx, src.ID)
	dstHeld, _ := s.ReservedAgents(ctx, dst.ID)
	if len(srcHeld) != 0 || len(dstHeld) != 2 {
		t.Fatalf("after the move: source slots %v, target slots %v", srcHeld, dstHeld)
	}
	if _, serves, err := s.GetBrokerForProject(ctx, dst.ID, p.ID); err != nil || !serves {
		t.Fatalf("the move did not link the target (serves %v, %v)", serves, err)
	}

	// A reconciliation of the source frees nothing of the agent now.
	must(t, s.ReleaseOn(ctx, src.ID, a.ID))
	if dstHeld, _ = s.ReservedAgents(ctx, dst.ID); len(dstHeld) != 2 {
		t.Fatalf("ReleaseOn the source freed the target's slot: %v", dstHeld)
	}
	back := moved
	back.BrokerID = src.ID
	must(t, s.UpdateAgentWith(ctx, &back, store.UpdateAgentOptions{ReleaseReservation: true}))
	srcHeld, _ = s.ReservedAgents(ctx, src.ID)
	dstHeld, _ = s.ReservedAgents(ctx, dst.ID)
	if len(srcHeld) != 0 || len(dstHeld) != 1 || back.BrokerID != src.ID {
		t.Fatalf("after the rollback: source slots %v, target slots %v", srcHeld, dstHeld)
	}
	must(t, s.ReleaseOn(ctx, dst.ID, other.ID))
	if dstHeld, _ = s.ReservedAgents(ctx, dst.ID); len(dstHeld) != 0 {
		t.Fatalf("ReleaseOn its broker left the slot: %v", dstHeld)
	}
}
