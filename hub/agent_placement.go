// Placement inputs for a create: the brokers the cascade weighs, the
// profile, and the capacity limit.

package hub

import (
	"cmp"
	"context"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// loadCandidates reads the brokers a create's placement weighs (see
// placementInputOf), with which provide for the project and which have a
// session.
func (s *Server) loadCandidates(ctx context.Context, c *Caller, p *store.Project, explicit string) (plan.BrokerCandidates, error) {
	bs := plan.BrokerCandidates{Provider: map[string]bool{}, Online: map[string]bool{}}
	add := func(b *store.Broker) {
		bs.List = append(bs.List, b)
		bs.Online[b.ID] = s.disp.Online(b.ID)
	}
	// The cascade decides on one broker when --broker or the project's
	// default names one that exists: load just that one, with whether it
	// provides for the project, not the fleet (a Hub with many brokers
	// would otherwise read them all on every create). A project default
	// the caller cannot see is like no default: the cascade goes on, so
	// it needs the others.
	if ref := cmp.Or(explicit, p.DefaultBrokerID); ref != "" {
		b, provides, err := s.store.GetBrokerForProject(ctx, ref, p.ID)
		switch {
		case err == nil:
			if explicit != "" || authz.Visible(*c, plan.CandidateRes(b, provides)) {
				bs.Provider[b.ID] = provides
				add(b)
				return bs, nil
			}
		case !isNotFound(err):
			return bs, err
		case explicit != "":
			return bs, nil // Select answers runtime_broker_not_found
		}
	}
	providers, err := s.store.ProjectProviders(ctx, p.ID)
	if err != nil {
		return bs, err
	}
	for _, id := range providers {
		bs.Provider[id] = true
	}
	page := store.Page{Limit: 1000}
	for {
		list, next, _, err := s.store.ListBrokers(ctx, page)
		if err != nil {
			return bs, err
		}
		for _, b := range list {
			add(b)
		}
		if next == "" {
			return bs, nil
		}
		page.Cursor = next
	}
}

func (s *Server) brokerLimit(ctx context.Context, b *store.Broker) (int, error) {
	lim, err := s.settings.Limits(ctx)
	if err != nil {
		return 0, err
	}
	return placement.EffectiveLimit(b.Settings.MaxAgents, lim.MaxAgentsPerBroker), nil
}
