package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const secretCols = `project_id, name, ciphertext, created_by, created_at, updated_at`

// putSecretSQL inserts or replaces a secret, keeping created_by and
// created_at of a replaced one. A project secret is only written while its
// project row exists, under a KEY SHARE lock: that lock conflicts with
// DeleteProject's FOR UPDATE, so either the delete waits for this
// statement's commit and then deletes the secret too, or this statement
// waits for the delete, finds no project and writes nothing.
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
	err := s.pool.QueryRow(ctx, putSecretSQL, n.ProjectID, n.Name, n.Ciphertext, n.CreatedBy, n.CreatedAt, n.UpdatedAt).
		Scan(&n.CreatedBy, &n.CreatedAt)
	if err != nil {
		// No row: the project does not exist (ErrNotFound).
		return mapErr(err, what)
	}
	n.CreatedAt = utc(n.CreatedAt)
	*sec = n
	return nil
}

// GetSecret returns a secret with its ciphertext.
func (s *Store) GetSecret(ctx context.Context, projectID, name string) (*store.Secret, error) {
	var sec store.Secret
	err := s.pool.QueryRow(ctx, `SELECT `+secretCols+` FROM secrets WHERE project_id = $1 AND name = $2`,
		projectID, name).Scan(&sec.ProjectID, &sec.Name, &sec.Ciphertext, &sec.CreatedBy, &sec.CreatedAt, &sec.UpdatedAt)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("secret %q of project %q", name, projectID))
	}
	sec.CreatedAt, sec.UpdatedAt = utc(sec.CreatedAt), utc(sec.UpdatedAt)
	return &sec, nil
}

// ListSecrets returns a project's secrets by name, without ciphertexts.
func (s *Store) ListSecrets(ctx context.Context, projectID string) ([]*store.Secret, error) {
	rows, _ := s.pool.Query(ctx, `SELECT project_id, name, created_by, created_at, updated_at FROM secrets
		WHERE project_id = $1 ORDER BY name`, projectID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Secret, error) {
		var sec store.Secret
		if err := r.Scan(&sec.ProjectID, &sec.Name, &sec.CreatedBy, &sec.CreatedAt, &sec.UpdatedAt); err != nil {
			return nil, err
		}
		sec.CreatedAt, sec.UpdatedAt = utc(sec.CreatedAt), utc(sec.UpdatedAt)
		return &sec, nil
	})
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("secrets of project %q", projectID))
	}
	if out == nil {
		out = []*store.Secret{}
	}
	return out, nil
}

// DeleteSecret deletes a secret; ErrNotFound if there is none.
func (s *Store) DeleteSecret(ctx context.Context, projectID, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM secrets WHERE project_id = $1 AND name = $2`, projectID, name)
	return mustAffect(tag, err, fmt.Sprintf("delete secret %q of project %q", name, projectID))
}
