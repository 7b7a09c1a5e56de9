package client

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/scion-go/scion/api"
)

// Delegated Jobs (ADR-0046): runs on spoke clusters an agent's broker
// reaches. See api/jobs.go for the routes.

// JobFilter narrows ListJobs: an agent (ID, or slug with Project), or a
// project (ID or name). Both empty lists the caller's own Jobs when it is
// an agent, every Job for a hub admin.
type JobFilter struct {
	Project string
	Agent   string
}

// maxJobTrace bounds a trace download (api.MaxJobTraceBytes and room).
const maxJobTrace = api.MaxJobTraceBytes + 4096

// RunJob asks for a Job for agent (an ID, or a slug in project).
func (c *Client) RunJob(ctx context.Context, agent, project string, req api.JobRunRequest) (*api.Job, error) {
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	var j api.Job
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("agents", s, "jobs"), query: agentQuery(project), body: req}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListAgentJobs returns one page of agent's Jobs (oldest first).
func (c *Client) ListAgentJobs(ctx context.Context, agent, project, cursor string, limit int) (*api.List[api.Job], error) {
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	q := pageQuery(cursor, limit)
	if project != "" {
		q.Set("project", project)
	}
	var l api.List[api.Job]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("agents", s, "jobs"), query: q}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListJobs returns one page of the Jobs filter selects.
func (c *Client) ListJobs(ctx context.Context, filter JobFilter, cursor string, limit int) (*api.List[api.Job], error) {
	q := pageQuery(cursor, limit)
	if filter.Project != "" {
		q.Set("project", filter.Project)
	}
	if filter.Agent != "" {
		q.Set("agent", filter.Agent)
	}
	var l api.List[api.Job]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("jobs"), query: q}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListAllJobs follows the cursors of ListJobs.
func (c *Client) ListAllJobs(ctx context.Context, filter JobFilter) ([]api.Job, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) (*api.List[api.Job], error) {
		return c.ListJobs(ctx, filter, cursor, allPageSize)
	})
}

// GetJob returns a Job by ID.
func (c *Client) GetJob(ctx context.Context, id string) (*api.Job, error) {
	s, err := segment("job", id)
	if err != nil {
		return nil, err
	}
	var j api.Job
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("jobs", s)}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// CancelJob asks the Job's broker to delete it on its spoke; the state
// becomes cancelled when the broker reports it.
func (c *Client) CancelJob(ctx context.Context, id string) (*api.Job, error) {
	s, err := segment("job", id)
	if err != nil {
		return nil, err
	}
	var j api.Job
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("jobs", s, "cancel")}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// JobLogs returns the latest log snapshot of a Job (at most
// api.MaxJobLogBytes, its tail).
func (c *Client) JobLogs(ctx context.Context, id string) (string, error) {
	b, err := c.jobBytes(ctx, id, "logs", "text/plain", api.MaxJobLogBytes+4096)
	return string(b), err
}

// JobTrace returns a Job's decoded trace; 404 when it has none.
func (c *Client) JobTrace(ctx context.Context, id string) ([]byte, error) {
	return c.jobBytes(ctx, id, "trace", "application/octet-stream", maxJobTrace)
}

func (c *Client) jobBytes(ctx context.Context, id, what, accept string, limit int64) ([]byte, error) {
	s, err := segment("job", id)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: apiPath("jobs", s, what), accept: accept})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("client: read job %s: %w", what, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("client: job %s larger than %d bytes", what, limit)
	}
	return b, nil
}
