package authstore

import (
	"context"
	"errors"
	"slices"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

func projectSubject(p *store.Project) Subject {
	return Subject{Res: authz.Resource{Project: &authz.Project{ID: p.ID, Owner: p.CreatedBy}}}
}

// decideProject decides method m on project id (its owner cached).
func (s *Store) decideProject(ctx context.Context, m, id string) error {
	a, err := actorOf(ctx)
	if err != nil || a.system {
		return err
	}
	p, err := s.project(ctx, id)
	if err != nil {
		return err
	}
	return verdict(Decide(m, a.caller, Subject{Res: authz.Resource{Project: p}}))
}

func (s *Store) CreateProject(ctx context.Context, p *store.Project) error {
	if _, err := decide(ctx, "CreateProject", projectSubject(p)); err != nil {
		return err
	}
	if err := s.inner.CreateProject(ctx, p); err != nil {
		return err
	}
	s.owners.put(p)
	return nil
}

// GetProject checks the record it returns.
func (s *Store) GetProject(ctx context.Context, idOrName string) (*store.Project, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.inner.GetProject(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	s.owners.put(p)
	if a.system {
		return p, nil
	}
	if err := verdict(Decide("GetProject", a.caller, projectSubject(p))); err != nil {
		return nil, err
	}
	return p, nil
}

// ListProjects lists every project for a caller that reads them all, and
// for a caller confined to one project, that one: a page of its own
// (total 1, no cursor).
func (s *Store) ListProjects(ctx context.Context, page store.Page) ([]*store.Project, string, int, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, "", 0, err
	}
	all, only := true, ""
	if !a.system {
		all, only = projectScope(a.caller)
	}
	if all {
		items, next, total, err := s.inner.ListProjects(ctx, page)
		for _, p := range items {
			s.owners.put(p)
		}
		return items, next, total, err
	}
	if _, err := store.DecodeCursor(page.Cursor); err != nil {
		return nil, "", 0, err
	}
	if only == "" || page.Cursor != "" {
		return []*store.Project{}, "", btoi(only != ""), nil
	}
	p, err := s.inner.GetProject(ctx, only)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.ID != only) {
		return []*store.Project{}, "", 0, nil
	}
	if err != nil {
		return nil, "", 0, err
	}
	s.owners.put(p)
	return []*store.Project{p}, "", 1, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Store) UpdateProject(ctx context.Context, p *store.Project) error {
	if err := s.decideProject(ctx, "UpdateProject", p.ID); err != nil {
		return err
	}
	return s.inner.UpdateProject(ctx, p)
}

func (s *Store) DeleteProject(ctx context.Context, id string) error {
	if err := s.decideProject(ctx, "DeleteProject", id); err != nil {
		return err
	}
	if err := s.inner.DeleteProject(ctx, id); err != nil {
		return err
	}
	s.owners.forget(id)
	return nil
}

func (s *Store) LinkProvider(ctx context.Context, projectID, brokerID string) error {
	if err := s.decideProject(ctx, "LinkProvider", projectID); err != nil {
		return err
	}
	return s.inner.LinkProvider(ctx, projectID, brokerID)
}

func (s *Store) UnlinkProvider(ctx context.Context, projectID, brokerID string) error {
	if err := s.decideProject(ctx, "UnlinkProvider", projectID); err != nil {
		return err
	}
	return s.inner.UnlinkProvider(ctx, projectID, brokerID)
}

// ProjectProviders is a project's: none of a project the caller may not
// see (as for an unknown project).
func (s *Store) ProjectProviders(ctx context.Context, projectID string) ([]string, error) {
	err := s.decideProject(ctx, "ProjectProviders", projectID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.inner.ProjectProviders(ctx, projectID)
}

// BrokerProjects lists the projects a broker serves, those the caller may
// learn of (a caller confined to one project: that one, if served).
func (s *Store) BrokerProjects(ctx context.Context, brokerID string) ([]string, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	ids, err := s.inner.BrokerProjects(ctx, brokerID)
	if err != nil || a.system {
		return ids, err
	}
	b := &authz.BrokerRes{ID: brokerID}
	return slices.DeleteFunc(ids, func(id string) bool {
		return !Allowed("BrokerProjects", a.caller, Subject{Res: authz.Resource{Broker: b, Project: &authz.Project{ID: id}}})
	}), nil
}
