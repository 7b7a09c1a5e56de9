package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const moveCols = `id, agent_id, source_broker_id, target_broker_id, step, outcome, source_cleanup, message,
	handoff, previous, created_by, created_at, updated_at`

func (s *Store) scanMove(row Row) (*store.Move, error) {
	var m store.Move
	var prev []byte
	if err := row.Scan(&m.ID, &m.AgentID, &m.SourceBrokerID, &m.TargetBrokerID, &m.Step, &m.Outcome, &m.SourceCleanup,
		&m.Message, &m.Handoff, &prev, &m.CreatedBy, s.d.ScanTime(&m.CreatedAt), s.d.ScanTime(&m.UpdatedAt)); err != nil {
		return nil, err
	}
	if len(prev) > 0 {
		m.Previous = prev
	}
	return &m, nil
}

// CreateMove inserts m: ErrAlreadyExists from the index that lets one
// move of an agent run at a time, ErrNotFound for an agent that is gone.
func (s *Store) CreateMove(ctx context.Context, m *store.Move) error {
	n := *m
	stamp(&n.ID, &n.CreatedAt, &n.UpdatedAt)
	what := fmt.Sprintf("create move %q of agent %q", n.ID, n.AgentID)
	rows, err := s.w.Exec(ctx, `INSERT INTO agent_moves (`+moveCols+`)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 WHERE EXISTS (SELECT 1 FROM agents WHERE id = $2)`,
		n.ID, n.AgentID, n.SourceBrokerID, n.TargetBrokerID, n.Step, n.Outcome, n.SourceCleanup, n.Message,
		n.Handoff, s.d.JSON(n.Previous), n.CreatedBy, s.d.Time(n.CreatedAt), s.d.Time(n.UpdatedAt))
	if err != nil {
		return s.mapErr(err, what)
	}
	if rows == 0 {
		return fmt.Errorf("%s: no such agent: %w", what, store.ErrNotFound)
	}
	*m = n
	return nil
}

// UpdateMove writes a running move's progress; ErrConflict once the
// stored move has ended.
func (s *Store) UpdateMove(ctx context.Context, m *store.Move) error {
	what := fmt.Sprintf("update move %q", m.ID)
	now := dbutil.Now()
	rows, err := s.w.Exec(ctx, `UPDATE agent_moves SET step = $1, outcome = $2, source_cleanup = $3, message = $4,
		previous = $5, updated_at = $6 WHERE id = $7 AND outcome = ''`,
		m.Step, m.Outcome, m.SourceCleanup, m.Message, s.d.JSON(m.Previous), s.d.Time(now), m.ID)
	if err != nil {
		return s.mapErr(err, what)
	}
	if rows == 0 {
		if _, gerr := s.GetMove(ctx, m.ID); gerr != nil {
			return gerr
		}
		return fmt.Errorf("%s: it has ended: %w", what, store.ErrConflict)
	}
	m.UpdatedAt = now
	return nil
}

// GetMove reads one move.
func (s *Store) GetMove(ctx context.Context, id string) (*store.Move, error) {
	m, err := s.scanMove(s.r.QueryRow(ctx, `SELECT `+moveCols+` FROM agent_moves WHERE id = $1`, id))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("move %q", id))
	}
	return m, nil
}

// ListMoves returns the agent's moves, newest first.
func (s *Store) ListMoves(ctx context.Context, agentID string) ([]*store.Move, error) {
	rows, err := s.r.Query(ctx, `SELECT `+moveCols+` FROM agent_moves WHERE agent_id = $1 ORDER BY created_at DESC, id DESC`, agentID)
	out, err := collect(rows, err, s.scanMove)
	return out, s.mapErr(err, fmt.Sprintf("moves of agent %q", agentID))
}

// RunningMoves returns the moves that have not ended, oldest first.
func (s *Store) RunningMoves(ctx context.Context) ([]*store.Move, error) {
	rows, err := s.r.Query(ctx, `SELECT `+moveCols+` FROM agent_moves WHERE outcome = '' ORDER BY created_at, id`)
	out, err := collect(rows, err, s.scanMove)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return out, s.mapErr(err, "running moves")
}
