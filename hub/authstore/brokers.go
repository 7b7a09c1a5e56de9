package authstore

import (
	"context"
	"slices"
	"time"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// brokerSubject is broker b as the caller sees it; serves is whether it
// serves the caller's project (only Visible's last resort asks).
func brokerSubject(b *store.Broker, a *actor, serves bool) Subject {
	res := brokerRes(b)
	res.ServesProject = serves
	x, _ := a.seen.broker(b.ID)
	return Subject{Res: authz.Resource{Broker: &res}, Named: x.named}
}

// checkBroker decides a read of broker b for a. Only a caller confined to
// a project, for a broker neither AutoProvide nor named by what it read,
// costs a read: whether the broker serves its project. serves, when not
// nil, is that answer already known (GetBrokerForProject's).
func (s *Store) checkBroker(ctx context.Context, a *actor, m string, b *store.Broker, serves *bool) error {
	if a.system {
		return nil
	}
	known := serves != nil && *serves
	if Allowed(m, a.caller, brokerSubject(b, a, known)) {
		a.seen.sawBroker(b)
		return nil
	}
	if a.caller.ProjectID == "" || serves != nil {
		return verdict(Decide(m, a.caller, brokerSubject(b, a, known)))
	}
	ids, err := s.inner.BrokerProjects(ctx, b.ID)
	if err != nil {
		return err
	}
	if err := verdict(Decide(m, a.caller, brokerSubject(b, a, slices.Contains(ids, a.caller.ProjectID)))); err != nil {
		return err
	}
	a.seen.sawBroker(b)
	return nil
}

// brokerSubjectOf is broker id as its request last read it, else as
// stored: what a write of it is decided on.
func (s *Store) brokerSubjectOf(ctx context.Context, a *actor, id string) (Subject, error) {
	if x, ok := a.seen.broker(id); ok && x.known {
		res := x.res
		return Subject{Res: authz.Resource{Broker: &res}}, nil
	}
	b, err := s.inner.GetBroker(ctx, id)
	if err != nil {
		return Subject{}, err
	}
	if b.ID != id { // GetBroker falls back to names: an ID is not one
		return Subject{}, store.ErrNotFound
	}
	res := brokerRes(b)
	return Subject{Res: authz.Resource{Broker: &res}}, nil
}

func (s *Store) decideBroker(ctx context.Context, m, id string) error {
	a, err := actorOf(ctx)
	if err != nil || a.system {
		return err
	}
	subj, err := s.brokerSubjectOf(ctx, a, id)
	if err != nil {
		return err
	}
	return verdict(Decide(m, a.caller, subj))
}

func (s *Store) CreateBroker(ctx context.Context, b *store.Broker) error {
	if _, err := decide(ctx, "CreateBroker", Subject{Res: authz.Resource{Broker: &authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy}}}); err != nil {
		return err
	}
	return s.inner.CreateBroker(ctx, b)
}

func (s *Store) GetBroker(ctx context.Context, idOrName string) (*store.Broker, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.inner.GetBroker(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	if err := s.checkBroker(ctx, a, "GetBroker", b, nil); err != nil {
		return nil, err
	}
	return b, nil
}

// GetBrokerForProject costs no read of its own for a caller confined to
// projectID: provides is whether the broker serves it.
func (s *Store) GetBrokerForProject(ctx context.Context, idOrName, projectID string) (*store.Broker, bool, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, false, err
	}
	b, provides, err := s.inner.GetBrokerForProject(ctx, idOrName, projectID)
	if err != nil {
		return nil, false, err
	}
	var serves *bool
	if !a.system && a.caller.ProjectID != "" && a.caller.ProjectID == projectID {
		serves = &provides
	}
	if err := s.checkBroker(ctx, a, "GetBrokerForProject", b, serves); err != nil {
		return nil, false, err
	}
	return b, provides, nil
}

// ListBrokers lists every broker for a caller with broker.read. For any
// other it is the brokers Visible to it, paged here by the same cursor
// (the last ID) and limits as the store's pages: the store has no filter
// for visibility, so the fleet is read (as the Hub's visibleBrokers did
// before) and the total counts what the caller may see.
func (s *Store) ListBrokers(ctx context.Context, page store.Page) ([]*store.Broker, string, int, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, "", 0, err
	}
	if a.system || everyBroker(a.caller) {
		return s.inner.ListBrokers(ctx, page)
	}
	after, err := store.DecodeCursor(page.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	var serving []string
	if a.caller.ProjectID != "" {
		if serving, err = s.inner.ProjectProviders(ctx, a.caller.ProjectID); err != nil {
			return nil, "", 0, err
		}
	}
	var vis []*store.Broker
	all := store.Page{Limit: 1000}
	for {
		bs, next, _, err := s.inner.ListBrokers(ctx, all)
		if err != nil {
			return nil, "", 0, err
		}
		for _, b := range bs {
			if Allowed("ListBrokers", a.caller, brokerSubject(b, a, slices.Contains(serving, b.ID))) {
				vis = append(vis, b)
			}
		}
		if next == "" {
			break
		}
		all.Cursor = next
	}
	return pageOf(vis, after, page.Limit, func(b *store.Broker) string { return b.ID })
}

// pageOf is one page of items (in the store's ID order) after the ID
// after, with the store's limits (<= 0: 100; at most 1000).
func pageOf[T any](items []T, after string, limit int, id func(T) string) ([]T, string, int, error) {
	switch {
	case limit <= 0:
		limit = 100
	case limit > 1000:
		limit = 1000
	}
	start := 0
	if after != "" {
		start = len(items)
		for i, x := range items {
			if id(x) > after {
				start = i
				break
			}
		}
	}
	end := min(start+limit, len(items))
	out := append([]T{}, items[start:end]...)
	next := ""
	if end < len(items) && end > start {
		next = store.EncodeCursor(id(items[end-1]))
	}
	return out, next, len(items), nil
}

func (s *Store) UpdateBroker(ctx context.Context, b *store.Broker) error {
	if err := s.decideBroker(ctx, "UpdateBroker", b.ID); err != nil {
		return err
	}
	return s.inner.UpdateBroker(ctx, b)
}

// UpdateBrokerWith decides on the record the transaction read, before fn
// sees it: a refusal writes nothing.
func (s *Store) UpdateBrokerWith(ctx context.Context, id string, fn func(*store.Broker) error) (*store.Broker, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	if a.system {
		return s.inner.UpdateBrokerWith(ctx, id, fn)
	}
	return s.inner.UpdateBrokerWith(ctx, id, func(b *store.Broker) error {
		res := brokerRes(b)
		if err := verdict(Decide("UpdateBrokerWith", a.caller, Subject{Res: authz.Resource{Broker: &res}})); err != nil {
			return err
		}
		return fn(b)
	})
}

func (s *Store) SetBrokerStatus(ctx context.Context, id, status string, lastSeen time.Time) error {
	if _, err := gate(ctx, "SetBrokerStatus"); err != nil {
		return err
	}
	return s.inner.SetBrokerStatus(ctx, id, status, lastSeen)
}

func (s *Store) DeleteBroker(ctx context.Context, id string, force bool) error {
	if err := s.decideBroker(ctx, "DeleteBroker", id); err != nil {
		return err
	}
	return s.inner.DeleteBroker(ctx, id, force)
}

// Capacity reservations.

func (s *Store) Reserve(ctx context.Context, brokerID, agentID string, limit int) error {
	if _, err := s.decideAgent(ctx, "Reserve", agentID); err != nil {
		return err
	}
	return s.inner.Reserve(ctx, brokerID, agentID, limit)
}

func (s *Store) ReleaseOn(ctx context.Context, brokerID, agentID string) error {
	if _, err := s.decideAgent(ctx, "ReleaseOn", agentID); err != nil {
		return err
	}
	return s.inner.ReleaseOn(ctx, brokerID, agentID)
}

func (s *Store) Release(ctx context.Context, agentID string) error {
	if _, err := s.decideAgent(ctx, "Release", agentID); err != nil {
		return err
	}
	return s.inner.Release(ctx, agentID)
}

func (s *Store) CountReservations(ctx context.Context, brokerID string) (int, error) {
	if _, err := gate(ctx, "CountReservations"); err != nil {
		return 0, err
	}
	return s.inner.CountReservations(ctx, brokerID)
}

func (s *Store) ReservationCounts(ctx context.Context) (map[string]int, error) {
	if _, err := gate(ctx, "ReservationCounts"); err != nil {
		return nil, err
	}
	return s.inner.ReservationCounts(ctx)
}

// ReservedAgents is reconciliation's (system): a caller gets none.
func (s *Store) ReservedAgents(ctx context.Context, brokerID string) ([]string, error) {
	if _, err := gate(ctx, "ReservedAgents"); err != nil {
		return nil, ignoreHidden(err)
	}
	return s.inner.ReservedAgents(ctx, brokerID)
}
