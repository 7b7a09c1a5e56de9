package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
)

// UseNonce records a broker's nonce as used; see store.BrokerNonces. An
// expired row for the same nonce is taken over, in the same statement.
func (s *Store) UseNonce(ctx context.Context, brokerID, nonce string, now, expiresAt time.Time) error {
	res, err := s.w.ExecContext(ctx, `INSERT INTO broker_nonces (broker_id, nonce, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (broker_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
		WHERE broker_nonces.expires_at <= ?`, brokerID, nonce, micros(expiresAt), micros(now))
	what := fmt.Sprintf("nonce of broker %q", brokerID)
	if err != nil {
		return mapErr(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%s: used before: %w", what, store.ErrAlreadyExists)
	}
	return nil
}

// PruneNonces deletes the nonces expired at now.
func (s *Store) PruneNonces(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM broker_nonces WHERE expires_at <= ?`, micros(now))
	if err != nil {
		return 0, mapErr(err, "prune broker nonces")
	}
	n, err := res.RowsAffected()
	return int(n), mapErr(err, "prune broker nonces")
}
