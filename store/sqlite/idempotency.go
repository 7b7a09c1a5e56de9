package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

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

// claimKeyTx inserts the record for agentID, replacing an expired one of
// the same caller and key; an unexpired one makes it ErrKeyInUse.
func claimKeyTx(ctx context.Context, tx *sql.Tx, r *store.IdempotencyRecord, agentID string) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (caller, key, request_hash, agent_id, status, response,
		created_at, expires_at) VALUES (?, ?, ?, ?, 0, NULL, ?, ?)
		ON CONFLICT (caller, key) DO UPDATE SET request_hash = excluded.request_hash, agent_id = excluded.agent_id,
			status = 0, response = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE idempotency_keys.expires_at <= excluded.created_at`,
		r.Caller, r.Key, r.RequestHash, agentID, micros(r.CreatedAt), micros(r.ExpiresAt))
	what := fmt.Sprintf("claim idempotency key %q", r.Key)
	if err != nil {
		return mapErr(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%s of %s: %w", what, r.Caller, store.ErrKeyInUse)
	}
	return nil
}

// GetIdempotencyRecord returns the caller's unexpired record for key.
func (s *Store) GetIdempotencyRecord(ctx context.Context, caller, key string, now time.Time) (*store.IdempotencyRecord, error) {
	r := store.IdempotencyRecord{Caller: caller, Key: key}
	var created, expires int64
	err := s.r.QueryRowContext(ctx, `SELECT request_hash, agent_id, status, response, created_at, expires_at
		FROM idempotency_keys WHERE caller = ? AND key = ? AND expires_at > ?`, caller, key, micros(now)).
		Scan(&r.RequestHash, &r.AgentID, &r.Status, &r.Response, &created, &expires)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("idempotency key %q of %s", key, caller))
	}
	r.CreatedAt, r.ExpiresAt = fromMicros(created), fromMicros(expires)
	return &r, nil
}

// CompleteIdempotencyRecord stores the call's answer.
func (s *Store) CompleteIdempotencyRecord(ctx context.Context, caller, key string, status int, response []byte) error {
	res, err := s.w.ExecContext(ctx, `UPDATE idempotency_keys SET status = ?, response = ? WHERE caller = ? AND key = ?`,
		status, response, caller, key)
	return mustAffect(res, err, fmt.Sprintf("complete idempotency key %q of %s", key, caller))
}

// PruneIdempotencyRecords deletes the records expired at now.
func (s *Store) PruneIdempotencyRecords(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE expires_at <= ?`, micros(now))
	if err != nil {
		return 0, mapErr(err, "prune idempotency keys")
	}
	n, err := res.RowsAffected()
	return int(n), mapErr(err, "prune idempotency keys")
}
