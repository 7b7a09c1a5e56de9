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
