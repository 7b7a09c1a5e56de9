package sqlite

import (
	"context"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const secretCols = `project_id, name, ciphertext, created_by, created_at, updated_at`

// PutSecret inserts or replaces a secret in one statement: the SELECT's
// WHERE adds no row for a project that does not exist (one statement is
// atomic against DeleteProject, whose transaction also deletes secrets),
// and the upsert keeps created_by and created_at of a replaced secret.
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
	var created int64
	err := s.w.QueryRowContext(ctx, `INSERT INTO secrets (`+secretCols+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE ?1 = '' OR EXISTS (SELECT 1 FROM projects WHERE id = ?1)
		ON CONFLICT (project_id, name) DO UPDATE SET ciphertext = excluded.ciphertext, updated_at = excluded.updated_at
		RETURNING created_by, created_at`,
		n.ProjectID, n.Name, n.Ciphertext, n.CreatedBy, micros(n.CreatedAt), micros(n.UpdatedAt)).Scan(&n.CreatedBy, &created)
	if err != nil {
		// No row: the project does not exist (ErrNotFound).
		return mapErr(err, what)
	}
	n.CreatedAt = fromMicros(created)
	*sec = n
	return nil
}

// GetSecret returns a secret with its ciphertext.
func (s *Store) GetSecret(ctx context.Context, projectID, name string) (*store.Secret, error) {
	var sec store.Secret
	var created, updated int64
	err := s.r.QueryRowContext(ctx, `SELECT `+secretCols+` FROM secrets WHERE project_id = ? AND name = ?`,
		projectID, name).Scan(&sec.ProjectID, &sec.Name, &sec.Ciphertext, &sec.CreatedBy, &created, &updated)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("secret %q of project %q", name, projectID))
	}
	sec.CreatedAt, sec.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &sec, nil
}

// ListSecrets returns a project's secrets by name, without ciphertexts.
func (s *Store) ListSecrets(ctx context.Context, projectID string) ([]*store.Secret, error) {
	what := fmt.Sprintf("secrets of project %q", projectID)
	rows, err := s.r.QueryContext(ctx, `SELECT project_id, name, created_by, created_at, updated_at FROM secrets
		WHERE project_id = ? ORDER BY name`, projectID)
	if err != nil {
		return nil, mapErr(err, what)
	}
	defer rows.Close()
	out := []*store.Secret{}
	for rows.Next() {
		var sec store.Secret
		var created, updated int64
		if err := rows.Scan(&sec.ProjectID, &sec.Name, &sec.CreatedBy, &created, &updated); err != nil {
			return nil, mapErr(err, what)
		}
		sec.CreatedAt, sec.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, &sec)
	}
	return out, mapErr(rows.Err(), what)
}

// DeleteSecret deletes a secret; ErrNotFound if there is none.
func (s *Store) DeleteSecret(ctx context.Context, projectID, name string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM secrets WHERE project_id = ? AND name = ?`, projectID, name)
	return mustAffect(res, err, fmt.Sprintf("delete secret %q of project %q", name, projectID))
}
