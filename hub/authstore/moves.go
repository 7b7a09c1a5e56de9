package authstore

import (
	"context"

	"github.com/scion-go/scion/store"
)

// Moves' records are the Hub's own: the room of moves authorizes the
// request (agent.lifecycle, the role delegation, the move's access
// table) and then writes and runs the saga as the system, from the
// Hub's context, since the saga outlives the request. No caller reaches
// them directly.

func (s *Store) CreateMove(ctx context.Context, m *store.Move) error {
	if _, err := gate(ctx, "CreateMove"); err != nil {
		return err
	}
	return s.inner.CreateMove(ctx, m)
}

func (s *Store) UpdateMove(ctx context.Context, m *store.Move) error {
	if _, err := gate(ctx, "UpdateMove"); err != nil {
		return err
	}
	return s.inner.UpdateMove(ctx, m)
}

func (s *Store) GetMove(ctx context.Context, id string) (*store.Move, error) {
	if _, err := gate(ctx, "GetMove"); err != nil {
		return nil, err
	}
	return s.inner.GetMove(ctx, id)
}

func (s *Store) ListMoves(ctx context.Context, agentID string) ([]*store.Move, error) {
	if _, err := gate(ctx, "ListMoves"); err != nil {
		return nil, err
	}
	return s.inner.ListMoves(ctx, agentID)
}

func (s *Store) RunningMoves(ctx context.Context) ([]*store.Move, error) {
	if _, err := gate(ctx, "RunningMoves"); err != nil {
		return nil, err
	}
	return s.inner.RunningMoves(ctx)
}
