package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
)

// UseNonce records a broker's nonce as used; see store.BrokerNonces. An
// expired row for the same nonce is taken over, in the same statement.
func (s *Store) UseNonce(ctx context.Context, brokerID, nonce string, now, expiresAt time.Time) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO broker_nonces (broker_id, nonce, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (broker_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
		WHERE broker_nonces.expires_at <= $4`, brokerID, nonce, expiresAt.UTC(), now.UTC())
	what := fmt.Sprintf("nonce of broker %q", brokerID)
	if err != nil {
		return mapErr(err, what)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: used before: %w", what, store.ErrAlreadyExists)
	}
	return nil
}

// PruneNonces deletes the nonces expired at now.
func (s *Store) PruneNonces(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM broker_nonces WHERE expires_at <= $1`, now.UTC())
	if err != nil {
		return 0, mapErr(err, "prune broker nonces")
	}
	return int(tag.RowsAffected()), nil
}
