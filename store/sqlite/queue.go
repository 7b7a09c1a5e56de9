package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const dispatchCols = `seq, id, broker_id, agent_id, run_id, method, body, key, status, attempts, result,
	created_by, created_at, updated_at`

func scanDispatch(sc scanner) (*store.Dispatch, error) {
	var d store.Dispatch
	var body []byte
	var created, updated int64
	if err := sc.Scan(&d.Seq, &d.ID, &d.BrokerID, &d.AgentID, &d.RunID, &d.Method, &body, &d.Key, &d.Status,
		&d.Attempts, &d.Result, &d.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	if body != nil {
		d.Body = body
	}
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &d, nil
}

// EnqueueDispatch stores d as pending unless the agent already has a
// pending dispatch for the method, which it then returns in d. The single
// write connection serialises this with every other write, so the check
// and the insert cannot interleave with another enqueue; the partial
// unique index is the backstop.
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
	err = s.write(ctx, func(tx *sql.Tx) error {
		old, err := scanDispatch(tx.QueryRowContext(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue
			WHERE agent_id = ? AND method = ? AND status = ?`, n.AgentID, n.Method, store.DispatchPending))
		switch {
		case err == nil:
			existing = old
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return mapErr(err, what)
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO dispatch_queue (id, broker_id, agent_id, run_id, method, body, key,
			status, attempts, result, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, '', ?, ?, ?)
			RETURNING seq`, n.ID, n.BrokerID, n.AgentID, n.RunID, n.Method, text(body), n.Key, n.Status, n.CreatedBy,
			micros(n.CreatedAt), micros(n.UpdatedAt)).Scan(&n.Seq)
		if err != nil {
			return mapErr(err, what)
		}
		if agent != nil {
			if updated, err = s.updateAgentTx(ctx, tx, agent); err != nil {
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
func (s *Store) updateAgentTx(ctx context.Context, tx *sql.Tx, a *store.Agent) (*store.Agent, error) {
	what := fmt.Sprintf("update agent %q", a.ID)
	n := *a
	n.Generations = dbutil.Generations(a.Generations)
	fields, err := agentFields(&n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	now := dbutil.Now()
	ok, err := execOne(ctx, tx.StmtContext(ctx, s.updateAgent), append(fields, micros(now), a.ID, a.Version))
	if err != nil {
		return nil, mapErr(err, what)
	}
	if !ok {
		var v int64
		if err := tx.QueryRowContext(ctx, `SELECT version FROM agents WHERE id = ?`, a.ID).Scan(&v); err != nil {
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
	rows, err := s.r.QueryContext(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue
		WHERE broker_id = ? AND status = ? ORDER BY seq LIMIT ?`,
		brokerID, store.DispatchPending, dbutil.Limit(store.Page{Limit: limit}))
	what := fmt.Sprintf("pending dispatches of broker %q", brokerID)
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
	d, err := scanDispatch(s.r.QueryRowContext(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue WHERE id = ?`, id))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("dispatch %q", id))
	}
	return d, nil
}

// NoteDispatchAttempt counts a delivery attempt that did not finish.
func (s *Store) NoteDispatchAttempt(ctx context.Context, id, result string) (int, error) {
	what := fmt.Sprintf("note attempt of dispatch %q", id)
	var n int
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE dispatch_queue SET attempts = attempts + 1, result = ?, updated_at = ?
			WHERE id = ? AND status = ? RETURNING attempts`, result, micros(dbutil.Now()), id, store.DispatchPending).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return s.notPending(ctx, tx, id, what)
		}
		return mapErr(err, what)
	})
	return n, err
}

// FinishDispatch moves a pending dispatch to its final status.
func (s *Store) FinishDispatch(ctx context.Context, id, status, result string) error {
	what := fmt.Sprintf("finish dispatch %q as %s", id, status)
	if err := checkFinal(status); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE dispatch_queue SET status = ?, result = ?, updated_at = ?
			WHERE id = ? AND status = ?`, status, result, micros(dbutil.Now()), id, store.DispatchPending)
		if err := mustAffect(res, err, what); errors.Is(err, store.ErrNotFound) {
			return s.notPending(ctx, tx, id, what)
		} else if err != nil {
			return err
		}
		return nil
	})
}

// notPending tells a missing dispatch (ErrNotFound) from a finished one
// (ErrConflict) after an update that matched no pending row.
func (s *Store) notPending(ctx context.Context, tx *sql.Tx, id, what string) error {
	var st string
	if err := tx.QueryRowContext(ctx, `SELECT status FROM dispatch_queue WHERE id = ?`, id).Scan(&st); err != nil {
		return mapErr(err, what)
	}
	return fmt.Errorf("%s: it is %s: %w", what, st, store.ErrConflict)
}

// checkFinal refuses a status a dispatch cannot finish with.
func checkFinal(status string) error {
	switch status {
	case store.DispatchDelivered, store.DispatchFailed, store.DispatchSkipped:
		return nil
	}
	return fmt.Errorf("%q is not a final dispatch status: %w", status, store.ErrConflict)
}

// PruneDispatches deletes finished dispatches older than cutoff.
func (s *Store) PruneDispatches(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM dispatch_queue WHERE status <> ? AND updated_at < ?`,
		store.DispatchPending, micros(cutoff))
	if err != nil {
		return 0, mapErr(err, "prune dispatches")
	}
	n, err := res.RowsAffected()
	return int(n), mapErr(err, "prune dispatches")
}
