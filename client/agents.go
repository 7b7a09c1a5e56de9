package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/scion-go/scion/api"
)

// Agent lifecycle actions (POST /agents/{agent}/{action}).
const (
	ActionStart   = "start"
	ActionStop    = "stop"
	ActionRestart = "restart"
	ActionSuspend = "suspend"
	ActionResume  = "resume"
)

// AgentFilter narrows ListAgents; empty fields do not filter.
type AgentFilter struct {
	Project string // ID or name
	Broker  string // ID or name
	Phase   string
}

func (f AgentFilter) query(cursor string, limit int) url.Values {
	q := pageQuery(cursor, limit)
	for k, v := range map[string]string{"project": f.Project, "broker": f.Broker, "phase": f.Phase} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// agentQuery carries ?project=, which an agent slug needs (an ID does not).
func agentQuery(project string) url.Values {
	if project == "" {
		return nil
	}
	return url.Values{"project": {project}}
}

// CreateAgent creates an agent; with req.Start it also starts it.
func (c *Client) CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error) {
	var a api.Agent
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("agents"), body: req}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// ListAgents returns one page of agents matching filter.
func (c *Client) ListAgents(ctx context.Context, filter AgentFilter, cursor string, limit int) (*api.List[api.Agent], error) {
	var l api.List[api.Agent]
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("agents"), query: filter.query(cursor, limit)}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListAllAgents follows the cursors and returns every agent matching filter.
func (c *Client) ListAllAgents(ctx context.Context, filter AgentFilter) ([]api.Agent, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) (*api.List[api.Agent], error) {
		return c.ListAgents(ctx, filter, cursor, allPageSize)
	})
}

// GetAgent returns an agent by ID, or by slug within project.
func (c *Client) GetAgent(ctx context.Context, agent, project string) (*api.Agent, error) {
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	var a api.Agent
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("agents", s), query: agentQuery(project)}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// DeleteAgent deletes an agent by ID, or by slug within project.
func (c *Client) DeleteAgent(ctx context.Context, agent, project string) error {
	return c.deleteAgent(ctx, agent, project, false)
}

// ForceDeleteAgent deletes the record of an agent whose runtime broker is
// no longer registered, which a plain delete refuses: its workload, if
// any, is left where it ran.
func (c *Client) ForceDeleteAgent(ctx context.Context, agent, project string) error {
	return c.deleteAgent(ctx, agent, project, true)
}

func (c *Client) deleteAgent(ctx context.Context, agent, project string, force bool) error {
	s, err := segment("agent", agent)
	if err != nil {
		return err
	}
	q := agentQuery(project)
	if force {
		if q == nil {
			q = url.Values{}
		}
		q.Set("force", "true")
	}
	return c.do(ctx, request{method: http.MethodDelete, path: apiPath("agents", s), query: q}, nil)
}

// AgentAction runs one of start, stop, restart, suspend or resume.
func (c *Client) AgentAction(ctx context.Context, agent, project, action string) (*api.Agent, error) {
	if err := api.CheckAgentAction(action); err != nil { // the Hub's own rule
		return nil, err
	}
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	var a api.Agent
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("agents", s, action), query: agentQuery(project)}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Logs streams an agent's output. With follow the stream stays open until
// ctx ends or the agent stops; tail > 0 starts with the last tail lines.
// The caller must close the returned reader. The stream is not size-bounded
// (it is meant to be copied, not buffered).
func (c *Client) Logs(ctx context.Context, agent, project string, follow bool, tail int) (io.ReadCloser, error) {
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if project != "" {
		q.Set("project", project)
	}
	if follow {
		q.Set("follow", "true")
	}
	if tail > 0 {
		q.Set("tail", strconv.Itoa(tail))
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: apiPath("agents", s, "logs"), query: q, accept: "text/plain"})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// UpdateAgent changes an agent (today: its role; the caller becomes its
// recorded delegator).
func (c *Client) UpdateAgent(ctx context.Context, agent, project string, req api.UpdateAgentRequest) (*api.Agent, error) {
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	var a api.Agent
	if err := c.do(ctx, request{method: http.MethodPatch, path: apiPath("agents", s), query: agentQuery(project), body: req}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// MoveDryRun sends POST /agents/{agent}/reincarnate with req.Broker and
// req.DryRun: the move's checks only, answering its plan. A
// refused move's error carries the plan in its details.plan (MovePlanOf).
func (c *Client) MoveDryRun(ctx context.Context, agent, project string, req api.ReincarnateRequest) (*api.MovePlan, error) {
	var p api.MovePlan
	if err := c.reincarnate(ctx, agent, project, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Reincarnate starts the agent's next generation on its own broker (req
// without a broker) and answers the agent as it then is.
func (c *Client) Reincarnate(ctx context.Context, agent, project string, req api.ReincarnateRequest) (*api.Agent, error) {
	var a api.Agent
	if err := c.reincarnate(ctx, agent, project, req, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

func (c *Client) reincarnate(ctx context.Context, agent, project string, req api.ReincarnateRequest, out any) error {
	if err := req.Validate(); err != nil { // the Hub's own rule
		return err
	}
	s, err := segment("agent", agent)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: http.MethodPost, path: apiPath("agents", s, "reincarnate"), query: agentQuery(project), body: req}, out)
}

// Move sends an eligible move (req without DryRun): the Hub answers 202
// with the move's record and runs it in the background.
func (c *Client) Move(ctx context.Context, agent, project string, req api.ReincarnateRequest) (*api.MoveAccepted, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	var out api.MoveAccepted
	if err := c.do(ctx, request{method: http.MethodPost, path: apiPath("agents", s, "reincarnate"), query: agentQuery(project), body: req}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AgentMoves lists the agent's moves, newest first.
func (c *Client) AgentMoves(ctx context.Context, agent, project string) ([]api.AgentMove, error) {
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	var out api.AgentMoves
	if err := c.do(ctx, request{method: http.MethodGet, path: apiPath("agents", s, "moves"), query: agentQuery(project)}, &out); err != nil {
		return nil, err
	}
	return out.Moves, nil
}

// MovePlanOf is the plan a refused move's error carries, if it has one.
func MovePlanOf(err error) *api.MovePlan {
	var e *api.Error
	if !errors.As(err, &e) || e.Details == nil || e.Details["plan"] == nil {
		return nil
	}
	b, merr := json.Marshal(e.Details["plan"])
	var p api.MovePlan
	if merr != nil || json.Unmarshal(b, &p) != nil || len(p.Checks) == 0 {
		return nil
	}
	return &p
}
