package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// CreateAgentWith creates the agent with what o asks for in one
// transaction; see store.Store.
func (s *Store) CreateAgentWith(ctx context.Context, a *store.Agent, o store.CreateAgentOptions) (bool, error) {
	if o.Key == nil {
		return s.createAgent(ctx, a, o, nil)
	}
	r := *o.Key
	if r.Caller == "" || r.Key == "" {
		return false, fmt.Errorf("idempotency record needs a caller and a key: %w", store.ErrConflict)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = dbutil.Now()
	}
	r.CreatedAt, r.ExpiresAt = dbutil.Time(r.CreatedAt), dbutil.Time(r.ExpiresAt)
	if !r.ExpiresAt.After(r.CreatedAt) {
		return false, fmt.Errorf("idempotency record for key %q expires before it is made: %w", r.Key, store.ErrConflict)
	}
	r.Status, r.Response = 0, nil
	linked, err := s.createAgent(ctx, a, o, &r)
	if err != nil {
		return false, err
	}
	r.AgentID = a.ID
	*o.Key = r
	return linked, nil
}

// claimKeySQL inserts a record, replacing an expired one of the same
// caller and key, or refuses (codeKeyInUse), which aborts the batch it is
// in. A concurrent claim of the same key waits on the primary key for the
// first transaction and then sees its row, unexpired: ErrKeyInUse.
const claimKeySQL = `WITH claimed AS (
		INSERT INTO idempotency_keys (caller, key, request_hash, agent_id, status, response, created_at, expires_at)
		VALUES ($1, $2, $3, $4, 0, NULL, $5, $6)
		ON CONFLICT (caller, key) DO UPDATE SET request_hash = excluded.request_hash, agent_id = excluded.agent_id,
			status = 0, response = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE idempotency_keys.expires_at <= excluded.created_at
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed) THEN 1
		ELSE scion_refuse('` + codeKeyInUse + `', 'idempotency key in use') END`

// queueClaimKey adds the claim to a batch; readClaimKey reads its result.
func queueClaimKey(b *pgx.Batch, r *store.IdempotencyRecord, agentID string) {
	b.Queue(claimKeySQL, r.Caller, r.Key, r.RequestHash, agentID, r.CreatedAt, r.ExpiresAt)
}

func readClaimKey(br pgx.BatchResults, r *store.IdempotencyRecord) error {
	var one int
	err := br.QueryRow().Scan(&one)
	if refusedWith(err, codeKeyInUse) {
		return fmt.Errorf("claim idempotency key %q of %s: %w", r.Key, r.Caller, store.ErrKeyInUse)
	}
	return mapErr(err, fmt.Sprintf("claim idempotency key %q", r.Key))
}

// GetIdempotencyRecord returns the caller's unexpired record for key.
func (s *Store) GetIdempotencyRecord(ctx context.Context, caller, key string, now time.Time) (*store.IdempotencyRecord, error) {
	r := store.IdempotencyRecord{Caller: caller, Key: key}
	err := s.pool.QueryRow(ctx, `SELECT request_hash, agent_id, status, response, created_at, expires_at
		FROM idempotency_keys WHERE caller = $1 AND key = $2 AND expires_at > $3`, caller, key, now).
		Scan(&r.RequestHash, &r.AgentID, &r.Status, &r.Response, &r.CreatedAt, &r.ExpiresAt)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("idempotency key %q of %s", key, caller))
	}
	r.CreatedAt, r.ExpiresAt = utc(r.CreatedAt), utc(r.ExpiresAt)
	return &r, nil
}

// CompleteIdempotencyRecord stores the call's answer.
func (s *Store) CompleteIdempotencyRecord(ctx context.Context, caller, key string, status int, response []byte) error {
	tag, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET status = $1, response = $2 WHERE caller = $3 AND key = $4`,
		status, bytesArg(response), caller, key)
	return mustAffect(tag, err, fmt.Sprintf("complete idempotency key %q of %s", key, caller))
}

// PruneIdempotencyRecords deletes the records expired at now.
func (s *Store) PruneIdempotencyRecords(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, mapErr(err, "prune idempotency keys")
	}
	return int(tag.RowsAffected()), nil
}
