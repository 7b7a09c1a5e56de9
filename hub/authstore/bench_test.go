package authstore

import (
	"context"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// instant is a store that answers the create path's calls at once, so a
// benchmark over it measures the wrapper alone.
type instant struct {
	store.Store
	p *store.Project
	b *store.Broker
}

func (s instant) GetProject(context.Context, string) (*store.Project, error) {
	p := *s.p
	return &p, nil
}
func (s instant) GetBrokerForProject(context.Context, string, string) (*store.Broker, bool, error) {
	b := *s.b
	return &b, true, nil
}
func (s instant) CreateAgentWith(context.Context, *store.Agent, store.CreateAgentOptions) (bool, error) {
	return false, nil
}
func (s instant) UpdateAgent(context.Context, *store.Agent) error { return nil }

// createPath is the store calls of one create, as the Hub makes them
// (authentication's own reads aside).
func createPath(b *testing.B, st store.Store, ctx func() context.Context) {
	now := time.Now()
	for b.Loop() {
		ctx := ctx()
		p, _ := st.GetProject(ctx, "one")
		br, _, _ := st.GetBrokerForProject(ctx, "b1", p.ID)
		a := &store.Agent{ID: "a", Slug: "a", ProjectID: p.ID, BrokerID: br.ID, CreatedBy: "user:um", Delegator: "user:um", CreatedAt: now}
		if _, err := st.CreateAgentWith(ctx, a, store.CreateAgentOptions{}); err != nil {
			b.Fatal(err)
		}
		a.Phase = api.PhaseRunning
		if err := st.UpdateAgent(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreatePath: the create path's store calls on a store that
// costs nothing, raw and through the wrapper (a new request's caller
// each time, as requireAuth makes it): the difference is what the
// wrapper adds to a create.
func BenchmarkCreatePath(b *testing.B) {
	inner := instant{p: &store.Project{ID: "p1", Name: "one", CreatedBy: "um"}, b: &store.Broker{ID: "b1", Name: "b1"}}
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		createPath(b, inner, context.Background)
	})
	b.Run("authstore", func(b *testing.B) {
		b.ReportAllocs()
		createPath(b, New(inner), func() context.Context { return as(admin) })
	})
}
