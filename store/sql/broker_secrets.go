package sqlstore

import (
	"context"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const brokerSecretCols = `broker_id, name, ciphertext, created_by, created_at, updated_at`

// putBrokerSecretSQL inserts or replaces a broker secret, keeping
// created_by and created_at of a replaced one. The broker's foreign key
// makes a missing broker ErrNotFound; on PostgreSQL its check locks the
// broker row (KEY SHARE), which DeleteBroker's DELETE conflicts with, so
// a secret put while its broker is deleted is either committed first and
// deleted by the cascade, or finds the broker gone (SQLite serialises
// the two).
const putBrokerSecretSQL = `INSERT INTO broker_secrets (` + brokerSecretCols + `) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (broker_id, name) DO UPDATE SET ciphertext = excluded.ciphertext, updated_at = excluded.updated_at
	RETURNING created_by, created_at`

// PutBrokerSecret inserts or replaces a broker secret.
func (s *Store) PutBrokerSecret(ctx context.Context, sec *store.BrokerSecret) error {
	what := fmt.Sprintf("put secret %q of broker %q", sec.Name, sec.BrokerID)
	if err := dbutil.CheckSecretValue(sec.Name, sec.Ciphertext); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	n := *sec
	n.UpdatedAt = dbutil.Now()
	if n.CreatedAt.IsZero() {
		n.CreatedAt = n.UpdatedAt
	}
	n.CreatedAt = dbutil.Time(n.CreatedAt)
	err := s.w.QueryRow(ctx, putBrokerSecretSQL, n.BrokerID, n.Name, n.Ciphertext, n.CreatedBy, s.d.Time(n.CreatedAt),
		s.d.Time(n.UpdatedAt)).Scan(&n.CreatedBy, s.d.ScanTime(&n.CreatedAt))
	if err != nil {
		return s.mapErr(err, what)
	}
	*sec = n
	return nil
}

// GetBrokerSecret returns a broker secret with its ciphertext.
func (s *Store) GetBrokerSecret(ctx context.Context, brokerID, name string) (*store.BrokerSecret, error) {
	var sec store.BrokerSecret
	err := s.r.QueryRow(ctx, `SELECT `+brokerSecretCols+` FROM broker_secrets WHERE broker_id = $1 AND name = $2`,
		brokerID, name).Scan(&sec.BrokerID, &sec.Name, &sec.Ciphertext, &sec.CreatedBy, s.d.ScanTime(&sec.CreatedAt),
		s.d.ScanTime(&sec.UpdatedAt))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("secret %q of broker %q", name, brokerID))
	}
	return &sec, nil
}

// ListBrokerSecrets returns a broker's secrets by name, without
// ciphertexts.
func (s *Store) ListBrokerSecrets(ctx context.Context, brokerID string) ([]*store.BrokerSecret, error) {
	rows, err := s.r.Query(ctx, `SELECT broker_id, name, created_by, created_at, updated_at FROM broker_secrets
		WHERE broker_id = $1 ORDER BY name`, brokerID)
	out, err := collect(rows, err, func(r Row) (*store.BrokerSecret, error) {
		var sec store.BrokerSecret
		return &sec, r.Scan(&sec.BrokerID, &sec.Name, &sec.CreatedBy, s.d.ScanTime(&sec.CreatedAt), s.d.ScanTime(&sec.UpdatedAt))
	})
	return out, s.mapErr(err, fmt.Sprintf("secrets of broker %q", brokerID))
}

// DeleteBrokerSecret deletes a broker secret; ErrNotFound if there is none.
func (s *Store) DeleteBrokerSecret(ctx context.Context, brokerID, name string) error {
	n, err := s.w.Exec(ctx, `DELETE FROM broker_secrets WHERE broker_id = $1 AND name = $2`, brokerID, name)
	return s.mustAffect(n, err, fmt.Sprintf("delete secret %q of broker %q", name, brokerID))
}
