package jobs

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

func jobView(j *store.Job) api.Job {
	v := api.Job{ID: j.ID, ProjectID: j.ProjectID, AgentID: j.AgentID, BrokerID: j.BrokerID, Cluster: j.Cluster, Tier: j.Tier,
		Namespace: j.Namespace, Name: j.Name, Image: j.Image, Command: j.Command, GPUs: j.GPUs, Queue: j.Queue,
		DeadlineSeconds: j.DeadlineSeconds, State: j.State, Message: j.Message, CreatedBy: j.CreatedBy,
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		ExitCode: j.ExitCode, Result: j.Result, Error: j.Error, LogBytes: j.LogBytes, TraceBytes: j.TraceBytes}
	if v.Command == nil {
		v.Command = []string{}
	}
	return v
}

// validateJobRun checks a JobRunRequest with the one rule of every layer
// (api.JobRunRequest.Validate) and fills its defaults (the deadline).
func validateJobRun(req *api.JobRunRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	req.WithDefaults()
	return nil
}

func jobNotFound(ref string) error {
	return api.NotFound(api.CodeJobNotFound, "job %s not found", api.Quote(ref))
}

// jobAgentRes is the agent authorization judges a Job by: its agent's
// record, or when that is gone, an agent of the Job's project created by
// whoever ran the Job.
func jobAgentRes(j *store.Job, a *store.Agent) *authz.AgentRes {
	if a != nil {
		return plan.AgentRes(a)
	}
	return &authz.AgentRes{ID: j.AgentID, ProjectID: j.ProjectID, CreatedBy: j.CreatedBy}
}

// loadJob resolves {job} and checks that c may act on its agent. Any
// refusal, and an unknown or malformed ID, is 404 job_not_found.
func (s *Service) loadJob(ctx context.Context, c *authz.Caller, r *http.Request) (*store.Job, error) {
	ref := r.PathValue("job")
	httpapi.MarkChecked(ctx) // every path below ends in a decision or a not-found
	if _, err := uuid.Parse(ref); err != nil {
		return nil, jobNotFound(ref)
	}
	j, err := s.store.GetJob(ctx, ref)
	if err != nil {
		return nil, storeerr.Map(err, api.CodeJobNotFound, "job "+api.Quote(ref))
	}
	p, err := s.store.GetProject(ctx, j.ProjectID)
	if err != nil {
		if isNotFound(err) {
			return nil, jobNotFound(ref)
		}
		return nil, err
	}
	a, err := s.store.GetAgent(ctx, j.AgentID)
	switch {
	case isNotFound(err):
		a = nil
	case err != nil:
		return nil, err
	}
	res := authz.Resource{Project: plan.ProjectRes(p), Agent: jobAgentRes(j, a)}
	if ref := authz.Can(*c, authz.AgentLifecycle, res); ref != nil {
		s.log.Info("request refused", "caller", c.Principal(), "kind", c.Kind, "action", authz.AgentLifecycle, "job", j.ID, "reason", ref.Reason)
		return nil, jobNotFound(j.ID)
	}
	return j, nil
}

func (s *Service) handleGetJob(r *http.Request, c *authz.Caller) (int, any, error) {
	j, err := s.loadJob(r.Context(), c, r)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, jobView(j), nil
}

// handleJobLogs is GET /jobs/{job}/logs: the latest log snapshot the
// broker sent, as text.
func (s *Service) handleJobLogs(w http.ResponseWriter, r *http.Request, c *authz.Caller) {
	j, err := s.loadJob(r.Context(), c, r)
	if err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(j.Logs))
}

// handleJobTrace is GET /jobs/{job}/trace: the decoded trace, 404 when
// the Job sent none.
func (s *Service) handleJobTrace(w http.ResponseWriter, r *http.Request, c *authz.Caller) {
	j, err := s.loadJob(r.Context(), c, r)
	if err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	if len(j.Trace) == 0 {
		httpapi.WriteError(s.log, w, r, api.NotFound(api.CodeNotFound, "job %s has no trace", j.ID))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "job-"+j.ID+".trace"))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(j.Trace)
}

// handleListAgentJobs is GET /agents/{agent}/jobs.
func (s *Service) handleListAgentJobs(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	a, err := s.hub.LoadAgent(ctx, c, r, authz.AgentLifecycle)
	if err != nil {
		return 0, nil, err
	}
	return s.listJobs(r, store.JobFilter{AgentID: a.ID, ProjectID: a.ProjectID})
}

// handleListJobs is GET /jobs?project=&agent= (see the package comment
// for who may list what).
func (s *Service) handleListJobs(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	agentRef, projRef := q.Get("agent"), q.Get("project")
	if err := api.CheckText("agent", agentRef, api.MaxRefLen); err != nil {
		return 0, nil, err
	}
	if err := api.CheckText("project", projRef, api.MaxRefLen); err != nil {
		return 0, nil, err
	}
	if agentRef == "" && projRef == "" && c.Kind == authz.Agent {
		agentRef = c.ID
	}
	var f store.JobFilter
	switch {
	case agentRef != "":
		// LoadAgent reads {agent} from the path: hand it the query's.
		r2 := r.Clone(ctx)
		r2.SetPathValue("agent", agentRef)
		a, err := s.hub.LoadAgent(ctx, c, r2, authz.AgentLifecycle)
		if err != nil {
			return 0, nil, err
		}
		f.AgentID, f.ProjectID = a.ID, a.ProjectID
	case projRef != "":
		p, err := s.hub.LoadProject(ctx, c, projRef, authz.ProjectRead)
		if err != nil {
			return 0, nil, err
		}
		if err := httpapi.Authorize(ctx, s.log, c, authz.AgentLifecycle, allAgentsOf(p), httpapi.ProjectNotFound(projRef)); err != nil {
			return 0, nil, err
		}
		f.ProjectID = p.ID
	default:
		if err := httpapi.Authorize(ctx, s.log, c, authz.AgentLifecycle, authz.Resource{Agent: &authz.AgentRes{}}, nil); err != nil {
			return 0, nil, api.Forbidden("listing every Job needs the hub admin role; pass ?project= or ?agent= (%s)", cmp.Or(api.AsError(err).Message, "refused"))
		}
	}
	return s.listJobs(r, f)
}

// allAgentsOf stands for every agent of project p: an agent nobody in
// particular created, so agent.lifecycle on it is what a caller has on
// all of them (an admin, the owner, a coordinator of the project).
func allAgentsOf(p *store.Project) authz.Resource {
	return authz.Resource{Project: plan.ProjectRes(p), Agent: &authz.AgentRes{ProjectID: p.ID}}
}

func (s *Service) listJobs(r *http.Request, f store.JobFilter) (int, any, error) {
	page, err := httpapi.PageFrom(r)
	if err != nil {
		return 0, nil, err
	}
	items, next, total, err := s.store.ListJobs(r.Context(), f, page)
	if err != nil {
		return 0, nil, err
	}
	out := api.List[api.Job]{Items: make([]api.Job, 0, len(items)), NextCursor: next, Total: total}
	for _, j := range items {
		out.Items = append(out.Items, jobView(j))
	}
	return http.StatusOK, out, nil
}
