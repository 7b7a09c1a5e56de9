package sqlstore

import (
	"context"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const projectCols = `id, name, git_remote, sharing_mode, default_broker_id, active_profile, created_by, created_at,
	updated_at`

func (s *Store) scanProject(row Row) (*store.Project, error) {
	var p store.Project
	if err := row.Scan(&p.ID, &p.Name, &p.GitRemote, &p.SharingMode, &p.DefaultBrokerID, &p.ActiveProfile,
		&p.CreatedBy, s.d.ScanTime(&p.CreatedAt), s.d.ScanTime(&p.UpdatedAt)); err != nil {
		return nil, err
	}
	return &p, nil
}

// CreateProject inserts p, filling in ID and times when zero.
func (s *Store) CreateProject(ctx context.Context, p *store.Project) error {
	n := *p
	stamp(&n.ID, &n.CreatedAt, &n.UpdatedAt)
	_, err := s.w.Exec(ctx, `INSERT INTO projects (`+projectCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		n.ID, n.Name, n.GitRemote, n.SharingMode, n.DefaultBrokerID, n.ActiveProfile, n.CreatedBy,
		s.d.Time(n.CreatedAt), s.d.Time(n.UpdatedAt))
	if err != nil {
		return s.mapErr(err, fmt.Sprintf("create project %q", n.Name))
	}
	*p = n
	return nil
}

// GetProject looks up by ID, then by name (an ID match wins when one
// project's name equals another's ID).
func (s *Store) GetProject(ctx context.Context, idOrName string) (*store.Project, error) {
	p, err := s.scanProject(s.r.QueryRow(ctx, `SELECT `+projectCols+` FROM projects
		WHERE id = $1 OR name = $1 ORDER BY id <> $1 LIMIT 1`, idOrName))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("project %q", idOrName))
	}
	return p, nil
}

// ListProjects lists projects in ID order.
func (s *Store) ListProjects(ctx context.Context, page store.Page) ([]*store.Project, string, int, error) {
	return list(ctx, s, "list projects", "projects", projectCols, nil, page, s.scanProject,
		func(p *store.Project) string { return p.ID })
}

// UpdateProject writes every field but ID, CreatedBy and CreatedAt and
// sets p.UpdatedAt to now.
func (s *Store) UpdateProject(ctx context.Context, p *store.Project) error {
	now := dbutil.Now()
	n, err := s.w.Exec(ctx, `UPDATE projects SET name = $1, git_remote = $2, sharing_mode = $3,
		default_broker_id = $4, active_profile = $5, updated_at = $6 WHERE id = $7`,
		p.Name, p.GitRemote, p.SharingMode, p.DefaultBrokerID, p.ActiveProfile, s.d.Time(now), p.ID)
	if err := s.mustAffect(n, err, fmt.Sprintf("update project %q", p.ID)); err != nil {
		return err
	}
	p.UpdatedAt = now
	return nil
}

// DeleteProject deletes the project, its provider links and its Jobs (by
// cascade) and its secrets; it refuses with ErrConflict while the project
// has agents. The project row is locked by one statement and the agents
// counted by the next (under READ COMMITTED a fresh snapshot), so a
// CreateAgent that committed while we waited for the lock is seen, and one
// that starts later waits for us and then fails its foreign-key check (as
// does a CreateJob, whose committed rows the cascade deletes). The lock
// also keeps PutSecret from adding a secret meanwhile (see putSecretSQL).
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	what := fmt.Sprintf("delete project %q", id)
	return s.d.Tx(ctx, func(tx Querier) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM projects WHERE id = $1 FOR UPDATE`, id).Scan(&one); err != nil {
			return s.mapErr(err, what)
		}
		var hasAgents bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE project_id = $1)`, id).Scan(&hasAgents); err != nil {
			return s.mapErr(err, what)
		}
		if hasAgents {
			return fmt.Errorf("%s: project still has agents: %w", what, store.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM secrets WHERE project_id = $1`, id); err != nil {
			return s.mapErr(err, what)
		}
		_, err := tx.Exec(ctx, `DELETE FROM projects WHERE id = $1`, id)
		return s.mapErr(err, what)
	})
}

// LinkProvider records that brokerID provides for projectID. Linking twice
// is not an error.
func (s *Store) LinkProvider(ctx context.Context, projectID, brokerID string) error {
	_, err := s.w.Exec(ctx, LinkProviderSQL, projectID, brokerID)
	return s.mapErr(err, fmt.Sprintf("link provider %q to project %q", brokerID, projectID))
}

// UnlinkProvider removes a link; ErrNotFound if there was none.
func (s *Store) UnlinkProvider(ctx context.Context, projectID, brokerID string) error {
	n, err := s.w.Exec(ctx, `DELETE FROM project_providers WHERE project_id = $1 AND broker_id = $2`, projectID, brokerID)
	return s.mustAffect(n, err, fmt.Sprintf("unlink provider %q from project %q", brokerID, projectID))
}

// ProjectProviders returns the IDs of the brokers providing for a project,
// sorted (never nil, so it encodes as a JSON array).
func (s *Store) ProjectProviders(ctx context.Context, projectID string) ([]string, error) {
	return s.strings(ctx, fmt.Sprintf("providers of project %q", projectID),
		`SELECT broker_id FROM project_providers WHERE project_id = $1 ORDER BY broker_id`, projectID)
}

// BrokerProjects returns the IDs of the projects a broker provides for,
// sorted (never nil).
func (s *Store) BrokerProjects(ctx context.Context, brokerID string) ([]string, error) {
	return s.strings(ctx, fmt.Sprintf("projects of broker %q", brokerID),
		`SELECT project_id FROM project_providers WHERE broker_id = $1 ORDER BY project_id`, brokerID)
}
