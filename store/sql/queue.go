package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// Queries name status 'pending' literally (store.DispatchPending) so that
// the planners can use the partial indexes on it.
const dispatchCols = `seq, id, broker_id, agent_id, run_id, method, body, key, status, attempts, result,
	created_by, created_at, updated_at`

func (s *Store) scanDispatch(row Row) (*store.Dispatch, error) {
	var d store.Dispatch
	var body []byte
	if err := row.Scan(&d.Seq, &d.ID, &d.BrokerID, &d.AgentID, &d.RunID, &d.Method, &body, &d.Key, &d.Status,
		&d.Attempts, &d.Result, &d.CreatedBy, s.d.ScanTime(&d.CreatedAt), s.d.ScanTime(&d.UpdatedAt)); err != nil {
		return nil, err
	}
	if body != nil {
		d.Body = body
	}
	return &d, nil
}

// EnqueueDispatch stores d as pending unless the agent already has a
// pending dispatch for the method, which it then returns in d. Two
// concurrent enqueues for one agent meet at the partial unique index: the
// later insert waits for the earlier transaction (or the single writer),
// then DO NOTHING, and reads the row that won.
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
	err = s.d.Tx(ctx, func(tx Querier) error {
		existing, updated = nil, nil
		// The pending dispatch the insert met can be finished (under READ
		// COMMITTED, by a drain that commits in between) before the read
		// sees it: then there is none pending, and the insert goes again.
		for range 10 {
			err := tx.QueryRow(ctx, `INSERT INTO dispatch_queue (id, broker_id, agent_id, run_id, method, body, key,
			status, attempts, result, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, '', $9, $10, $11)
			ON CONFLICT (agent_id, method) WHERE status = 'pending' DO NOTHING RETURNING seq`,
				n.ID, n.BrokerID, n.AgentID, n.RunID, n.Method, s.d.JSON(body), n.Key, n.Status, n.CreatedBy,
				s.d.Time(n.CreatedAt), s.d.Time(n.UpdatedAt)).Scan(&n.Seq)
			if errors.Is(err, sql.ErrNoRows) {
				existing, err = s.scanDispatch(tx.QueryRow(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue
				WHERE agent_id = $1 AND method = $2 AND status = 'pending'`, n.AgentID, n.Method))
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				return s.mapErr(err, what)
			}
			if err != nil {
				return s.mapErr(err, what)
			}
			if agent != nil {
				updated, err = s.updateAgentIn(ctx, tx, agent)
			}
			return err
		}
		return fmt.Errorf("%s: the pending dispatch kept being finished: %w", what, store.ErrConflict)
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

// PendingDispatches returns a broker's pending dispatches in order.
func (s *Store) PendingDispatches(ctx context.Context, brokerID string, limit int) ([]*store.Dispatch, error) {
	rows, err := s.r.Query(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue
		WHERE broker_id = $1 AND status = 'pending' ORDER BY seq LIMIT $2`,
		brokerID, dbutil.Limit(store.Page{Limit: limit}))
	out, err := collect(rows, err, s.scanDispatch)
	return out, s.mapErr(err, fmt.Sprintf("pending dispatches of broker %q", brokerID))
}

// GetDispatch looks up by ID.
func (s *Store) GetDispatch(ctx context.Context, id string) (*store.Dispatch, error) {
	d, err := s.scanDispatch(s.r.QueryRow(ctx, `SELECT `+dispatchCols+` FROM dispatch_queue WHERE id = $1`, id))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("dispatch %q", id))
	}
	return d, nil
}

// NoteDispatchAttempt counts a delivery attempt that did not finish.
func (s *Store) NoteDispatchAttempt(ctx context.Context, id, result string) (int, error) {
	what := fmt.Sprintf("note attempt of dispatch %q", id)
	var n int
	err := s.w.QueryRow(ctx, `UPDATE dispatch_queue SET attempts = attempts + 1, result = $1, updated_at = $2
		WHERE id = $3 AND status = 'pending' RETURNING attempts`, result, s.d.Time(dbutil.Now()), id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, s.notPending(ctx, id, what)
	}
	return n, s.mapErr(err, what)
}

// FinishDispatch moves a pending dispatch to its final status.
func (s *Store) FinishDispatch(ctx context.Context, id, status, result string) error {
	what := fmt.Sprintf("finish dispatch %q as %s", id, status)
	switch status {
	case store.DispatchDelivered, store.DispatchFailed, store.DispatchSkipped:
	default:
		return fmt.Errorf("%s: %q is not a final dispatch status: %w", what, status, store.ErrConflict)
	}
	n, err := s.w.Exec(ctx, `UPDATE dispatch_queue SET status = $1, result = $2, updated_at = $3
		WHERE id = $4 AND status = 'pending'`, status, result, s.d.Time(dbutil.Now()), id)
	if err != nil {
		return s.mapErr(err, what)
	}
	if n == 0 {
		return s.notPending(ctx, id, what)
	}
	return nil
}

// notPending tells a missing dispatch (ErrNotFound) from a finished one
// (ErrConflict) after an update that matched no pending row. A finished
// row never becomes pending again, so the answer cannot be stale.
func (s *Store) notPending(ctx context.Context, id, what string) error {
	var st string
	if err := s.w.QueryRow(ctx, `SELECT status FROM dispatch_queue WHERE id = $1`, id).Scan(&st); err != nil {
		return s.mapErr(err, what)
	}
	return fmt.Errorf("%s: it is %s: %w", what, st, store.ErrConflict)
}

// PruneDispatches deletes finished dispatches older than cutoff.
func (s *Store) PruneDispatches(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := s.w.Exec(ctx, `DELETE FROM dispatch_queue WHERE status <> 'pending' AND updated_at < $1`, s.d.Time(cutoff))
	return int(n), s.mapErr(err, "prune dispatches")
}

// claimable checks rec and returns the copy to insert: times normalised,
// no answer yet.
func claimable(rec *store.IdempotencyRecord) (store.IdempotencyRecord, error) {
	r := *rec
	if r.Caller == "" || r.Key == "" {
		return r, fmt.Errorf("idempotency record needs a caller and a key: %w", store.ErrConflict)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = dbutil.Now()
	}
	r.CreatedAt, r.ExpiresAt = dbutil.Time(r.CreatedAt), dbutil.Time(r.ExpiresAt)
	if !r.ExpiresAt.After(r.CreatedAt) {
		return r, fmt.Errorf("idempotency record for key %q expires before it is made: %w", r.Key, store.ErrConflict)
	}
	r.Status, r.Response = 0, nil
	return r, nil
}

// ClaimKeySQL inserts an idempotency record, replacing an expired one of
// the same caller and key; an unexpired one is kept (no row affected).
// Arguments: AgentCreate.KeyArgs.
const ClaimKeySQL = `INSERT INTO idempotency_keys (caller, key, request_hash, agent_id, status, response, created_at, expires_at)
	VALUES ($1, $2, $3, $4, 0, NULL, $5, $6)
	ON CONFLICT (caller, key) DO UPDATE SET request_hash = excluded.request_hash, agent_id = excluded.agent_id,
		status = 0, response = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
	WHERE idempotency_keys.expires_at <= excluded.created_at`

// claimArgs are ClaimKeySQL's arguments for r claimed by agentID.
func (s *Store) claimArgs(r *store.IdempotencyRecord, agentID string) []any {
	return []any{r.Caller, r.Key, r.RequestHash, agentID, s.d.Time(r.CreatedAt), s.d.Time(r.ExpiresAt)}
}

// KeyInUse is the error for a claim of a key the caller holds.
func KeyInUse(r *store.IdempotencyRecord) error {
	return fmt.Errorf("claim idempotency key %q of %s: %w", r.Key, r.Caller, store.ErrKeyInUse)
}

// GetIdempotencyRecord returns the caller's unexpired record for key.
func (s *Store) GetIdempotencyRecord(ctx context.Context, caller, key string, now time.Time) (*store.IdempotencyRecord, error) {
	r := store.IdempotencyRecord{Caller: caller, Key: key}
	err := s.r.QueryRow(ctx, `SELECT request_hash, agent_id, status, response, created_at, expires_at
		FROM idempotency_keys WHERE caller = $1 AND key = $2 AND expires_at > $3`, caller, key, s.d.Time(now)).
		Scan(&r.RequestHash, &r.AgentID, &r.Status, &r.Response, s.d.ScanTime(&r.CreatedAt), s.d.ScanTime(&r.ExpiresAt))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("idempotency key %q of %s", key, caller))
	}
	return &r, nil
}

// CompleteIdempotencyRecord stores the call's answer.
func (s *Store) CompleteIdempotencyRecord(ctx context.Context, caller, key string, status int, response []byte) error {
	n, err := s.w.Exec(ctx, `UPDATE idempotency_keys SET status = $1, response = $2 WHERE caller = $3 AND key = $4`,
		status, response, caller, key)
	return s.mustAffect(n, err, fmt.Sprintf("complete idempotency key %q of %s", key, caller))
}

// PruneIdempotencyRecords deletes the records expired at now.
func (s *Store) PruneIdempotencyRecords(ctx context.Context, now time.Time) (int, error) {
	n, err := s.w.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at <= $1`, s.d.Time(now))
	return int(n), s.mapErr(err, "prune idempotency keys")
}
