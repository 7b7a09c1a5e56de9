package events

import (
	"context"
	"time"

	"github.com/scion-go/scion/store"
)

// Store is a store.Store that publishes on Bus every change its writes
// make to agents, brokers and projects, after the write succeeded. A
// failed write publishes nothing; a write that changed nothing visible
// may publish (a subscriber reads the record again and sees no change).
type Store struct {
	store.Store
	Bus *Bus
}

// Wrap is s publishing on b.
func Wrap(s store.Store, b *Bus) *Store { return &Store{Store: s, Bus: b} }

func (s *Store) pub(err error, kind, id string, deleted bool) error {
	if err == nil {
		s.Bus.Publish(Event{Kind: kind, ID: id, Deleted: deleted})
	}
	return err
}

// brokers publishes that some broker's counts changed (a slot taken or
// given back).
func (s *Store) brokers(err error) error { return s.pub(err, KindBroker, "", false) }

func (s *Store) CreateAgent(ctx context.Context, a *store.Agent, reserveLimit *int) error {
	err := s.Store.CreateAgent(ctx, a, reserveLimit)
	if err == nil && reserveLimit != nil {
		s.brokers(nil)
	}
	return s.pub(err, KindAgent, a.ID, false)
}

func (s *Store) CreateAgentWith(ctx context.Context, a *store.Agent, o store.CreateAgentOptions) (bool, error) {
	linked, err := s.Store.CreateAgentWith(ctx, a, o)
	if err == nil {
		s.brokers(nil)
	}
	return linked, s.pub(err, KindAgent, a.ID, false)
}

func (s *Store) UpdateAgent(ctx context.Context, a *store.Agent) error {
	return s.pub(s.Store.UpdateAgent(ctx, a), KindAgent, a.ID, false)
}

func (s *Store) UpdateAgentWith(ctx context.Context, a *store.Agent, o store.UpdateAgentOptions) error {
	err := s.Store.UpdateAgentWith(ctx, a, o)
	if err == nil && o.ReserveLimit != nil {
		s.brokers(nil)
	}
	return s.pub(err, KindAgent, a.ID, false)
}

func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	err := s.Store.DeleteAgent(ctx, id)
	if err == nil {
		s.brokers(nil)
	}
	return s.pub(err, KindAgent, id, true)
}

func (s *Store) Reserve(ctx context.Context, brokerID, agentID string, limit int) error {
	return s.brokers(s.Store.Reserve(ctx, brokerID, agentID, limit))
}

func (s *Store) Release(ctx context.Context, agentID string) error {
	return s.brokers(s.Store.Release(ctx, agentID))
}

func (s *Store) ReleaseOn(ctx context.Context, brokerID, agentID string) error {
	return s.brokers(s.Store.ReleaseOn(ctx, brokerID, agentID))
}

func (s *Store) CreateBroker(ctx context.Context, b *store.Broker) error {
	return s.pub(s.Store.CreateBroker(ctx, b), KindBroker, b.ID, false)
}

func (s *Store) UpdateBroker(ctx context.Context, b *store.Broker) error {
	return s.pub(s.Store.UpdateBroker(ctx, b), KindBroker, b.ID, false)
}

func (s *Store) UpdateBrokerWith(ctx context.Context, id string, fn func(*store.Broker) error) (*store.Broker, error) {
	b, err := s.Store.UpdateBrokerWith(ctx, id, fn)
	return b, s.pub(err, KindBroker, id, false)
}

func (s *Store) SetBrokerStatus(ctx context.Context, id, status string, lastSeen time.Time) error {
	return s.pub(s.Store.SetBrokerStatus(ctx, id, status, lastSeen), KindBroker, id, false)
}

// DeleteBroker publishes that projects changed too: a project's default
// broker and providers may have named it.
func (s *Store) DeleteBroker(ctx context.Context, id string, force bool) error {
	err := s.Store.DeleteBroker(ctx, id, force)
	if err == nil {
		s.Bus.Publish(Event{Kind: KindProject})
	}
	return s.pub(err, KindBroker, id, true)
}

func (s *Store) JoinBroker(ctx context.Context, hash []byte, now time.Time, build func(*store.JoinToken) (*store.Broker, error)) (*store.Broker, error) {
	b, err := s.Store.JoinBroker(ctx, hash, now, build)
	if err != nil {
		return b, err
	}
	return b, s.pub(nil, KindBroker, b.ID, false)
}

// LinkProvider and UnlinkProvider change both the broker's projects and
// the project's providers.
func (s *Store) LinkProvider(ctx context.Context, projectID, brokerID string) error {
	err := s.Store.LinkProvider(ctx, projectID, brokerID)
	s.pub(err, KindProject, projectID, false)
	return s.pub(err, KindBroker, brokerID, false)
}

func (s *Store) UnlinkProvider(ctx context.Context, projectID, brokerID string) error {
	err := s.Store.UnlinkProvider(ctx, projectID, brokerID)
	s.pub(err, KindProject, projectID, false)
	return s.pub(err, KindBroker, brokerID, false)
}

func (s *Store) CreateProject(ctx context.Context, p *store.Project) error {
	return s.pub(s.Store.CreateProject(ctx, p), KindProject, p.ID, false)
}

func (s *Store) UpdateProject(ctx context.Context, p *store.Project) error {
	return s.pub(s.Store.UpdateProject(ctx, p), KindProject, p.ID, false)
}

// DeleteProject publishes that agents changed too (ID ""): a forced
// delete takes the project's agents with it.
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	err := s.Store.DeleteProject(ctx, id)
	if err == nil {
		s.Bus.Publish(Event{Kind: KindAgent})
	}
	return s.pub(err, KindProject, id, true)
}
