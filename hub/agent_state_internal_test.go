package hub

import (
	"context"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// TestAfterDispatchFromAStaleCopy: a create writes its phase starting from
// the record it committed, without reading it back. When a status report
// changed the agent in between, that write meets a version conflict and
// the update goes on from the stored record: it is written on top of the
// report's version (3), not over it, and the create's phase lands.
func TestAfterDispatchFromAStaleCopy(t *testing.T) {
	// The Hub records a broker's answer here outside any request: as the
	// system, as its own work does (hub/authstore).
	ctx := authstore.AsSystem(context.Background())
	s, st := newInternalServer(t)
	projectID, err := s.EnsureProject(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, meanwhile := range []bool{false, true} {
		a := &store.Agent{Slug: map[bool]string{false: "quiet", true: "raced"}[meanwhile], ProjectID: projectID,
			Harness: "generic", Phase: api.PhaseProvisioning, Generation: 1, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateAgent(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		held := *a
		if meanwhile { // a report lands between the commit and the phase update
			cp := *a
			cp.StatusMessage = "from a report"
			if err := st.UpdateAgent(ctx, &cp); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.afterDispatchFrom(ctx, a.ID, &held, wire.AgentStatus{State: api.ContainerRunning, ObservedAt: time.Now().UnixNano()}, nil, true)
		if err != nil {
			t.Fatalf("meanwhile=%v: %v", meanwhile, err)
		}
		stored, err := st.GetAgent(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Phase != api.PhaseRunning || got.Phase != api.PhaseRunning || got.Version != stored.Version {
			t.Fatalf("meanwhile=%v: phase %q (answered %q), version %d (answered %d)", meanwhile, stored.Phase, got.Phase, stored.Version, got.Version)
		}
		if want := map[bool]int64{false: 2, true: 3}[meanwhile]; stored.Version != want {
			t.Fatalf("meanwhile=%v: version %d, want %d", meanwhile, stored.Version, want)
		}
	}
}

// TestStartOvertakenByItsContainersReport: the report of a started
// container (pending: a pod waiting for a node) reaches the Hub before the
// start's own answer. The report alone leaves a stopped agent stopped (a
// late report never revives one); the start's answer, the older news, is
// not applied; the start then settles the agent provisioning, and it
// keeps the slot its start took. Before: stopped/pending, slot released,
// as a loaded CI run of TestFlatBrokerInstances saw.
func TestStartOvertakenByItsContainersReport(t *testing.T) {
	ctx := authstore.AsSystem(context.Background())
	s, st := newInternalServer(t)
	projectID, err := s.EnsureProject(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	b := &store.Broker{Name: "b1", Status: api.BrokerOnline}
	if err := st.CreateBroker(ctx, b); err != nil {
		t.Fatal(err)
	}
	limit := 5
	a := &store.Agent{Slug: "k", ProjectID: projectID, BrokerID: b.ID, Harness: "generic", Phase: api.PhaseStopped,
		ContainerStatus: api.ContainerMissing, Generation: 1}
	if err := st.CreateAgent(ctx, a, &limit); err != nil { // the start's slot
		t.Fatal(err)
	}
	answered := time.Now().UnixNano()              // the start's answer, stamped first
	reported := answered + int64(time.Millisecond) // the pod's report, stamped after
	if _, err := s.applyStatus(ctx, b.ID, wire.AgentStatus{AgentID: a.ID, State: api.ContainerPending, ObservedAt: reported}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetAgent(ctx, a.ID); got.Phase != api.PhaseStopped || got.ContainerStatus != api.ContainerPending {
		t.Fatalf("after the report alone: %s/%s, want stopped/pending", got.Phase, got.ContainerStatus)
	}
	got, err := s.afterDispatch(ctx, a.ID, wire.AgentStatus{AgentID: a.ID, State: api.ContainerPending, ObservedAt: answered,
		WorkspacePlacement: api.PlacementExport}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != api.PhaseProvisioning || got.WorkspacePlacement != api.PlacementExport {
		t.Fatalf("the start answered %s/%s placed %q, want provisioning/pending on the export", got.Phase, got.ContainerStatus, got.WorkspacePlacement)
	}
	if n, err := st.CountReservations(ctx, b.ID); err != nil || n != 1 {
		t.Fatalf("%d reservations (%v): the pending agent gave up the slot its start took", n, err)
	}
	// A stop's exit reported late changes nothing (older than the start).
	if _, err := s.afterDispatch(ctx, a.ID, wire.AgentStatus{AgentID: a.ID, State: api.ContainerExited, ObservedAt: answered - 1}, nil, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetAgent(ctx, a.ID); got.Phase != api.PhaseProvisioning {
		t.Fatalf("an older exit turned the started agent %s", got.Phase)
	}
}
