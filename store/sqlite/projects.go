package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const projectCols = `id, name, git_remote, sharing_mode, default_broker_id, active_profile, created_by, created_at,
	updated_at`

func scanProject(sc scanner) (*store.Project, error) {
	var p store.Project
	var created, updated int64
	if err := sc.Scan(&p.ID, &p.Name, &p.GitRemote, &p.SharingMode, &p.DefaultBrokerID, &p.ActiveProfile, &p.CreatedBy,
		&created, &updated); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &p, nil
}

// CreateProject inserts p, filling in ID and times when zero.
func (s *Store) CreateProject(ctx context.Context, p *store.Project) error {
	n := *p
	if n.ID == "" {
		n.ID = dbutil.NewID()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = dbutil.Now()
	}
	n.CreatedAt = dbutil.Time(n.CreatedAt)
	if n.UpdatedAt.IsZero() {
		n.UpdatedAt = n.CreatedAt
	}
	n.UpdatedAt = dbutil.Time(n.UpdatedAt)
	_, err := s.w.ExecContext(ctx, `INSERT INTO projects (`+projectCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID, n.Name, n.GitRemote, n.SharingMode, n.DefaultBrokerID, n.ActiveProfile, n.CreatedBy, micros(n.CreatedAt),
		micros(n.UpdatedAt))
	if err != nil {
		return mapErr(err, fmt.Sprintf("create project %q", n.Name))
	}
	*p = n
	return nil
}

// GetProject looks up by ID, then by name (an ID match wins when one
// project's name equals another's ID).
func (s *Store) GetProject(ctx context.Context, idOrName string) (*store.Project, error) {
	p, err := scanProject(s.selectProject.QueryRowContext(ctx, idOrName))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("project %q", idOrName))
	}
	return p, nil
}

// ListProjects lists projects in ID order.
func (s *Store) ListProjects(ctx context.Context, page store.Page) ([]*store.Project, string, int, error) {
	items, next, total, err := list(ctx, s, "projects", projectCols, "", nil, page, scanProject,
		func(p *store.Project) string { return p.ID })
	if err != nil {
		return nil, "", 0, mapErr(err, "list projects")
	}
	return items, next, total, nil
}

// UpdateProject writes every field but ID, CreatedBy and CreatedAt and
// sets p.UpdatedAt to now.
func (s *Store) UpdateProject(ctx context.Context, p *store.Project) error {
	now := dbutil.Now()
	res, err := s.w.ExecContext(ctx, `UPDATE projects SET name = ?, git_remote = ?, sharing_mode = ?,
		default_broker_id = ?, active_profile = ?, updated_at = ? WHERE id = ?`,
		p.Name, p.GitRemote, p.SharingMode, p.DefaultBrokerID, p.ActiveProfile, micros(now), p.ID)
	if err := mustAffect(res, err, fmt.Sprintf("update project %q", p.ID)); err != nil {
		return err
	}
	p.UpdatedAt = now
	return nil
}

// DeleteProject deletes the project, its provider links (by cascade) and
// its secrets; it refuses with ErrConflict while the project has agents.
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	what := fmt.Sprintf("delete project %q", id)
	return s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM agents WHERE project_id = ? LIMIT 1)`, id).Scan(&n); err != nil {
			return mapErr(err, what)
		}
		if n > 0 {
			return fmt.Errorf("%s: project still has agents: %w", what, store.ErrConflict)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM projects WHERE id = ?`, id)
		if err := mustAffect(res, err, what); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM secrets WHERE project_id = ?`, id)
		return mapErr(err, what)
	})
}

// LinkProvider records that brokerID provides for projectID. Linking twice
// is not an error.
func (s *Store) LinkProvider(ctx context.Context, projectID, brokerID string) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO project_providers (project_id, broker_id) VALUES (?, ?)
		ON CONFLICT DO NOTHING`, projectID, brokerID)
	return mapErr(err, fmt.Sprintf("link provider %q to project %q", brokerID, projectID))
}

// UnlinkProvider removes a link; ErrNotFound if there was none.
func (s *Store) UnlinkProvider(ctx context.Context, projectID, brokerID string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM project_providers WHERE project_id = ? AND broker_id = ?`, projectID, brokerID)
	return mustAffect(res, err, fmt.Sprintf("unlink provider %q from project %q", brokerID, projectID))
}

// ProjectProviders returns the IDs of the brokers providing for a project,
// sorted (never nil, so it encodes as a JSON array).
func (s *Store) ProjectProviders(ctx context.Context, projectID string) ([]string, error) {
	ids, err := s.stmtStrings(ctx, s.projectProviders, projectID)
	return ids, mapErr(err, fmt.Sprintf("providers of project %q", projectID))
}

// BrokerProjects returns the IDs of the projects a broker provides for,
// sorted (never nil).
func (s *Store) BrokerProjects(ctx context.Context, brokerID string) ([]string, error) {
	ids, err := s.strings(ctx, `SELECT project_id FROM project_providers WHERE broker_id = ? ORDER BY project_id`, brokerID)
	return ids, mapErr(err, fmt.Sprintf("projects of broker %q", brokerID))
}

func (s *Store) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	return collectStrings(rows, err)
}

func (s *Store) stmtStrings(ctx context.Context, st *sql.Stmt, args ...any) ([]string, error) {
	return collectStrings(st.QueryContext(ctx, args...))
}

func collectStrings(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
