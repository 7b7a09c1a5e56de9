package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/scion-go/scion/api"
)

// CreateProject creates a project (POST /projects).
func (c *Client) CreateProject(ctx context.Context, req api.CreateProjectRequest) (*api.Project, error) {
	var p api.Project
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("projects"), body: req}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListProjects returns one page of projects; pass the previous page's
// NextCursor to get the next. limit 0 lets the Hub choose.
func (c *Client) ListProjects(ctx context.Context, cursor string, limit int) (*api.List[api.Project], error) {
	var l api.List[api.Project]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("projects"), query: pageQuery(cursor, limit)}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListAllProjects follows the cursors and returns every project.
func (c *Client) ListAllProjects(ctx context.Context) ([]api.Project, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) (*api.List[api.Project], error) {
		return c.ListProjects(ctx, cursor, allPageSize)
	})
}

// GetProject returns a project by ID or name.
func (c *Client) GetProject(ctx context.Context, project string) (*api.Project, error) {
	s, err := segment("project", project)
	if err != nil {
		return nil, err
	}
	var p api.Project
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("projects", s)}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// UpdateProject changes the non-nil fields of req.
func (c *Client) UpdateProject(ctx context.Context, project string, req api.UpdateProjectRequest) (*api.Project, error) {
	s, err := segment("project", project)
	if err != nil {
		return nil, err
	}
	var p api.Project
	if err := c.do(ctx, request{method: http.MethodPatch, path: apiPath("projects", s), body: req}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteProject deletes a project by ID or name and returns what its
// Runtime Brokers removed for it and what was left. It is refused while
// the project has agents.
func (c *Client) DeleteProject(ctx context.Context, project string) (*api.ProjectDeleted, error) {
	return c.deleteProject(ctx, project, false)
}

// ForceDeleteProject deletes a project and its agents' records, with
// only best-effort deletes of their workloads on their Runtime Brokers:
// what may be left running is in the answer's Left.
func (c *Client) ForceDeleteProject(ctx context.Context, project string) (*api.ProjectDeleted, error) {
	return c.deleteProject(ctx, project, true)
}

func (c *Client) deleteProject(ctx context.Context, project string, force bool) (*api.ProjectDeleted, error) {
	s, err := segment("project", project)
	if err != nil {
		return nil, err
	}
	var q url.Values
	if force {
		q = url.Values{"force": {"true"}}
	}
	var out api.ProjectDeleted
	if err := c.do(ctx, request{method: http.MethodDelete, path: apiPath("projects", s), query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
