package sqlstore

import (
	"context"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const secretCols = `project_id, name, ciphertext, created_by, created_at, updated_at`

// putSecretSQL inserts or replaces a secret, keeping created_by and
// created_at of a replaced one. A project secret is only written while its
// project row exists, under a KEY SHARE lock: that lock conflicts with
// DeleteProject's FOR UPDATE, so either the delete waits for this
// statement's commit and then deletes the secret too, or this statement
// waits for the delete, finds no project and writes nothing (on SQLite the
// one statement is atomic against DeleteProject's transaction). The casts
// type the SELECT's parameters for PostgreSQL.
const putSecretSQL = `WITH p AS (SELECT 1 FROM projects WHERE id = $1 FOR KEY SHARE)
	INSERT INTO secrets (` + secretCols + `)
	SELECT $1::text, $2::text, $3::bytea, $4::text, $5::timestamptz, $6::timestamptz
	WHERE $1::text = '' OR EXISTS (SELECT 1 FROM p)
	ON CONFLICT (project_id, name) DO UPDATE SET ciphertext = excluded.ciphertext, updated_at = excluded.updated_at
	RETURNING created_by, created_at`

// PutSecret inserts or replaces a secret.
func (s *Store) PutSecret(ctx context.Context, sec *store.Secret) error {
	what := fmt.Sprintf("put secret %q of project %q", sec.Name, sec.ProjectID)
	if err := dbutil.CheckSecret(sec); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	n := *sec
	n.UpdatedAt = dbutil.Now()
	if n.CreatedAt.IsZero() {
		n.CreatedAt = n.UpdatedAt
	}
	n.CreatedAt = dbutil.Time(n.CreatedAt)
	err := s.w.QueryRow(ctx, putSecretSQL, n.ProjectID, n.Name, n.Ciphertext, n.CreatedBy, s.d.Time(n.CreatedAt),
		s.d.Time(n.UpdatedAt)).Scan(&n.CreatedBy, s.d.ScanTime(&n.CreatedAt))
	if err != nil {
		// No row: the project does not exist (ErrNotFound).
		return s.mapErr(err, what)
	}
	*sec = n
	return nil
}

// GetSecret returns a secret with its ciphertext.
func (s *Store) GetSecret(ctx context.Context, projectID, name string) (*store.Secret, error) {
	var sec store.Secret
	err := s.r.QueryRow(ctx, `SELECT `+secretCols+` FROM secrets WHERE project_id = $1 AND name = $2`, projectID, name).
		Scan(&sec.ProjectID, &sec.Name, &sec.Ciphertext, &sec.CreatedBy, s.d.ScanTime(&sec.CreatedAt), s.d.ScanTime(&sec.UpdatedAt))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("secret %q of project %q", name, projectID))
	}
	return &sec, nil
}

// ListSecrets returns a project's secrets by name, without ciphertexts.
func (s *Store) ListSecrets(ctx context.Context, projectID string) ([]*store.Secret, error) {
	rows, err := s.r.Query(ctx, `SELECT project_id, name, created_by, created_at, updated_at FROM secrets
		WHERE project_id = $1 ORDER BY name`, projectID)
	out, err := collect(rows, err, func(r Row) (*store.Secret, error) {
		var sec store.Secret
		return &sec, r.Scan(&sec.ProjectID, &sec.Name, &sec.CreatedBy, s.d.ScanTime(&sec.CreatedAt), s.d.ScanTime(&sec.UpdatedAt))
	})
	return out, s.mapErr(err, fmt.Sprintf("secrets of project %q", projectID))
}

// DeleteSecret deletes a secret; ErrNotFound if there is none.
func (s *Store) DeleteSecret(ctx context.Context, projectID, name string) error {
	n, err := s.w.Exec(ctx, `DELETE FROM secrets WHERE project_id = $1 AND name = $2`, projectID, name)
	return s.mustAffect(n, err, fmt.Sprintf("delete secret %q of project %q", name, projectID))
}
