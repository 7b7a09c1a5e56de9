package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const dispatchCols = `seq, id, broker_id, agent_id, run_id, method, body, key, status, attempts, result,
	created_by, created_at, updated_at`

func scanDispatch(row pgx.Row) (*store.Dispatch, error) {
	var d store.Dispatch
	var body []byte
	if err := row.Scan(&d.Seq, &d.ID, &d.BrokerID, &d.AgentID, &d.RunID, &d.Method, &body, &d.Key, &d.Status,
		&d.Attempts, &d.Result, &d.CreatedBy, &d.CreatedAt, &d.UpdatedAt); err != nil {
		return nil, err
	}
	if body != nil {
		d.Body = body
	}
	d.CreatedAt, d.UpdatedAt = utc(d.CreatedAt), utc(d.UpdatedAt)
	return &d, nil
}

// EnqueueDispatch stores d as pending unless the agent already has a
// pending dispatch for the method, which it then returns in d. Two
// concurrent enqueues for one agent meet at the partial unique index: the
// later insert waits for the earlier transaction, then DO NOTHING, and
// reads the row that won.
func (s *Store) EnqueueDispatch(ctx context.Context, d *store.Dispatch, agent *store.Agent) (bool, error) {
	n := *d
	if n.ID == "" {
		n.ID = dbutil.NewID()
	}
	if n.Key == "" {
		n.Key = "queued:" + n.ID
	}
	n.Status, n.Attempts, n.Result = store.DispatchPending, 0, ""
	n.CreatedAt = dbutil.Now()
	n.UpdatedAt = n.CreatedAt
	what := fmt.Sprintf("enqueue %s for agent %q", n.Method, n.AgentID)
	body, err := dbutil.Payload(n.Body)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	var existing *store.Dispatch
	var updated *store.Agent
	err = s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO dispatch_queue (id, broker_id, agent_id, run_id, method, body, key,
			status, attempts, result, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, '', $9, $10, $11)
			ON CONFLICT (agent_id, method) WHERE status = 'pending' DO NOTHING RETURNING seq`,
			n.ID, n.BrokerID, n.AgentID, n.RunID, n.Method, jsonArg(body), n.Key, n.Status, n.CreatedBy,
			n.CreatedAt, n.UpdatedAt).Scan(&n.Seq)
		if errors.Is(err, pgx.ErrNoRows) {
			old, err := scanDispatch(tx.QueryRow(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue
				WHERE agent_id = $1 AND method = $2 AND status = 'pending'`, n.AgentID, n.Method))
			if err != nil {
				return mapErr(err, what)
			}
			existing = old
			return nil
		}
		if err != nil {
			return mapErr(err, what)
		}
		if agent != nil {
			if updated, err = updateAgentTx(ctx, tx, agent); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if existing != nil {
		*d = *existing
		return false, nil
	}
	if body != nil {
		n.Body = body
	}
	*d = n
	if updated != nil {
		*agent = *updated
	}
	return true, nil
}

// updateAgentTx is UpdateAgent inside a transaction: it writes a copy of
// a if its version matches and returns the copy as written.
func updateAgentTx(ctx context.Context, tx pgx.Tx, a *store.Agent) (*store.Agent, error) {
	what := fmt.Sprintf("update agent %q", a.ID)
	n := *a
	n.Generations = dbutil.Generations(a.Generations)
	fields, err := agentFields(&n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	now := dbutil.Now()
	tag, err := tx.Exec(ctx, updateAgentSQL, append(fields, now, a.ID, a.Version)...)
	if err != nil {
		return nil, mapErr(err, what)
	}
	if tag.RowsAffected() == 0 {
		var v int64
		if err := tx.QueryRow(ctx, `SELECT version FROM agents WHERE id = $1`, a.ID).Scan(&v); err != nil {
			return nil, mapErr(err, what)
		}
		return nil, fmt.Errorf("%s: version %d, stored %d: %w", what, a.Version, v, store.ErrConflict)
	}
	n.Version++
	n.UpdatedAt = now
	return &n, nil
}

// PendingDispatches returns a broker's pending dispatches in order.
func (s *Store) PendingDispatches(ctx context.Context, brokerID string, limit int) ([]*store.Dispatch, error) {
	what := fmt.Sprintf("pending dispatches of broker %q", brokerID)
	rows, err := s.pool.Query(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue
		WHERE broker_id = $1 AND status = 'pending' ORDER BY seq LIMIT $2`,
		brokerID, dbutil.Limit(store.Page{Limit: limit}))
	if err != nil {
		return nil, mapErr(err, what)
	}
	defer rows.Close()
	out := []*store.Dispatch{}
	for rows.Next() {
		d, err := scanDispatch(rows)
		if err != nil {
			return nil, mapErr(err, what)
		}
		out = append(out, d)
	}
	return out, mapErr(rows.Err(), what)
}

// GetDispatch looks up by ID.
func (s *Store) GetDispatch(ctx context.Context, id string) (*store.Dispatch, error) {
	d, err := scanDispatch(s.pool.QueryRow(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue WHERE id = $1`, id))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("dispatch %q", id))
	}
	return d, nil
}

// NoteDispatchAttempt counts a delivery attempt that did not finish.
func (s *Store) NoteDispatchAttempt(ctx context.Context, id, result string) (int, error) {
	what := fmt.Sprintf("note attempt of dispatch %q", id)
	var n int
	err := s.pool.QueryRow(ctx, `UPDATE dispatch_queue SET attempts = attempts + 1, result = $1, updated_at = $2
		WHERE id = $3 AND status = 'pending' RETURNING attempts`, result, dbutil.Now(), id).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, s.notPending(ctx, id, what)
	}
	return n, mapErr(err, what)
}

// FinishDispatch moves a pending dispatch to its final status.
func (s *Store) FinishDispatch(ctx context.Context, id, status, result string) error {
	what := fmt.Sprintf("finish dispatch %q as %s", id, status)
	switch status {
	case store.DispatchDelivered, store.DispatchFailed, store.DispatchSkipped:
	default:
		return fmt.Errorf("%s: %q is not a final dispatch status: %w", what, status, store.ErrConflict)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE dispatch_queue SET status = $1, result = $2, updated_at = $3
		WHERE id = $4 AND status = 'pending'`, status, result, dbutil.Now(), id)
	if err != nil {
		return mapErr(err, what)
	}
	if tag.RowsAffected() == 0 {
		return s.notPending(ctx, id, what)
	}
	return nil
}

// notPending tells a missing dispatch (ErrNotFound) from a finished one
// (ErrConflict) after an update that matched no pending row. A finished
// row never becomes pending again, so the answer cannot be stale.
func (s *Store) notPending(ctx context.Context, id, what string) error {
	var st string
	if err := s.pool.QueryRow(ctx, `SELECT status FROM dispatch_queue WHERE id = $1`, id).Scan(&st); err != nil {
		return mapErr(err, what)
	}
	return fmt.Errorf("%s: it is %s: %w", what, st, store.ErrConflict)
}

// PruneDispatches deletes finished dispatches older than cutoff.
func (s *Store) PruneDispatches(ctx context.Context, cutoff time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM dispatch_queue WHERE status <> 'pending' AND updated_at < $1`, cutoff)
	if err != nil {
		return 0, mapErr(err, "prune dispatches")
	}
	return int(tag.RowsAffected()), nil
}
