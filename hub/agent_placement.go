// Placement inputs for a create: the brokers the cascade weighs, the
// profile, and the capacity limit.

package hub

import (
	"cmp"
	"context"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/store"
)

// loadCandidates reads the brokers a create's placement weighs (see
// placementInputOf), with which provide for the project and which have a
// session.
func (s *Server) loadCandidates(ctx context.Context, c *Caller, p *store.Project, explicit string) (brokerCandidates, error) {
	bs := brokerCandidates{Provider: map[string]bool{}, Online: map[string]bool{}}
	add := func(b *store.Broker) {
		bs.List = append(bs.List, b)
		bs.Online[b.ID] = s.brokerOnline(b.ID)
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
			if explicit != "" || authz.Visible(*c, candidateRes(b, provides)) {
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

// resolveProfile: -p first, then the project's active profile, then the
// selected broker's default profile. The creator's profile is never
// inherited.
func resolveProfile(req string, p *store.Project, b *store.Broker) string {
	if req != "" {
		return req
	}
	if p.ActiveProfile != "" {
		return p.ActiveProfile
	}
	for _, pr := range b.Profiles {
		if pr.Default {
			return pr.Name
		}
	}
	return ""
}

// checkProfile refuses a profile the broker does not offer. A broker that
// declares no profiles takes the name as a plain label.
func checkProfile(b *store.Broker, profile string) error {
	if profile == "" || len(b.Profiles) == 0 {
		return nil
	}
	names := make([]string, 0, len(b.Profiles))
	for _, pr := range b.Profiles {
		if pr.Name == profile {
			return nil
		}
		names = append(names, pr.Name)
	}
	return api.Conflict(api.CodeProfileNotAvailable, "runtime broker %q does not offer profile %q; it offers: %s (choose one with -p, or change the project's active profile)",
		b.Name, profile, strings.Join(names, ", ")).WithDetail("profiles", names)
}

func (s *Server) brokerLimit(ctx context.Context, b *store.Broker) (int, error) {
	lim, err := s.hubLimits(ctx)
	if err != nil {
		return 0, err
	}
	return placement.EffectiveLimit(b.Settings.MaxAgents, lim.MaxAgentsPerBroker), nil
}

// reservationScopeError is the refusal of agent a's slot on its broker b
// while the agent holds one on another broker (store.ErrReservationScope):
// the store never moves a slot (multi-broker spec, "Capacity of flat
// Runtime Brokers"). That broker's reconciliation frees it, since the
// agent is not assigned there; so does deleting the agent.
func reservationScopeError(a *store.Agent, b *store.Broker) error {
	return api.Errorf(api.CodeReservationScopeConflict,
		"agent %q holds its capacity slot on another runtime broker than its own (%q); reservations are never moved between brokers: "+
			"that broker frees the slot when it next reports its inventory (at the latest when it reconnects), or delete the agent",
		a.Slug, b.Name).WithDetail("agent", a.Slug).WithDetail("broker", b.Name)
}

func quotaError(b *store.Broker, limit int) error {
	return api.Errorf(api.CodeQuotaExceeded,
		"runtime broker %q is at its limit of %d running agents; stop an agent there or choose another broker", b.Name, limit).
		WithDetail("broker", b.Name).WithDetail("limit", limit)
}
