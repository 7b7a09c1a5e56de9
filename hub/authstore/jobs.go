package authstore

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// A Job is judged by agent.lifecycle on its agent: its agent's record,
// or when that is gone (the ledger is history), an agent of the Job's
// project created by whoever ran the Job.

// jobAgentSubject is the agent agentID of a Job of project projectID run
// by createdBy, with its project.
func (s *Store) jobAgentSubject(ctx context.Context, a *actor, projectID, agentID, createdBy string) (Subject, error) {
	res := authz.AgentRes{ID: agentID, ProjectID: projectID, CreatedBy: createdBy}
	if seen, ok := a.seen.agent(agentID); ok {
		res = seen.res
	} else if agentID != "" {
		x, err := s.inner.GetAgent(ctx, agentID)
		switch {
		case err == nil:
			a.seen.sawAgent(x, false)
			res = agentRes(x)
		case !errors.Is(err, store.ErrNotFound):
			return Subject{}, err
		}
	}
	p, err := s.project(ctx, res.ProjectID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Subject{}, err
	}
	return Subject{Res: authz.Resource{Project: p, Agent: &res}}, nil
}

// jobSubject is Job id's agent as its request last saw the Job, else as
// stored.
func (s *Store) jobSubject(ctx context.Context, a *actor, id string) (Subject, error) {
	j, ok := a.seen.job(id)
	if !ok {
		x, err := s.inner.GetJob(ctx, id)
		if err != nil {
			return Subject{}, err
		}
		a.seen.sawJob(x, false)
		j = jobSeen{projectID: x.ProjectID, agentID: x.AgentID, createdBy: x.CreatedBy}
	}
	return s.jobAgentSubject(ctx, a, j.projectID, j.agentID, j.createdBy)
}

func (s *Store) decideJob(ctx context.Context, m, id string) (*actor, error) {
	a, err := actorOf(ctx)
	if err != nil || a.system {
		return a, err
	}
	subj, err := s.jobSubject(ctx, a, id)
	if err != nil {
		return a, err
	}
	return a, verdict(Decide(m, a.caller, subj))
}

func (s *Store) CreateJob(ctx context.Context, j *store.Job) error {
	a, err := actorOf(ctx)
	if err != nil {
		return err
	}
	if !a.system {
		subj, err := s.jobAgentSubject(ctx, a, j.ProjectID, j.AgentID, j.CreatedBy)
		if err != nil {
			return err
		}
		if err := verdict(Decide("CreateJob", a.caller, subj)); err != nil {
			return err
		}
	}
	if err := s.inner.CreateJob(ctx, j); err != nil {
		return err
	}
	a.seen.sawJob(j, true)
	return nil
}

// GetJob checks the row it returns (which costs the read of its agent
// and, once, of its project's owner).
func (s *Store) GetJob(ctx context.Context, id string) (*store.Job, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	j, err := s.inner.GetJob(ctx, id)
	if err != nil || a.system {
		return j, err
	}
	subj, err := s.jobAgentSubject(ctx, a, j.ProjectID, j.AgentID, j.CreatedBy)
	if err != nil {
		return nil, err
	}
	if err := verdict(Decide("GetJob", a.caller, subj)); err != nil {
		return nil, err
	}
	a.seen.sawJob(j, true)
	return j, nil
}

// ListJobs narrows the filter to what the caller may see: the Jobs of an
// agent it may act on, of a project where it may act on every agent, or
// for a hub admin all of them. With no filter, an agent lists its own
// and a caller confined to a project that project's; anything else is
// nothing.
func (s *Store) ListJobs(ctx context.Context, f store.JobFilter, page store.Page) ([]*store.Job, string, int, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, "", 0, err
	}
	if !a.system {
		ok, err := s.jobScope(ctx, a, &f)
		if err != nil {
			return nil, "", 0, err
		}
		if !ok {
			if _, err := store.DecodeCursor(page.Cursor); err != nil {
				return nil, "", 0, err
			}
			return []*store.Job{}, "", 0, nil
		}
	}
	items, next, total, err := s.inner.ListJobs(ctx, f, page)
	if err == nil {
		for _, j := range items {
			a.seen.sawJob(j, true)
		}
	}
	return items, next, total, err
}

// jobScope decides which Jobs of f the caller may list, narrowing f; ok
// false: none.
func (s *Store) jobScope(ctx context.Context, a *actor, f *store.JobFilter) (bool, error) {
	c := a.caller
	allowed := func(subj Subject) bool { return Allowed("ListJobs", c, subj) }
	// Every agent of a project: an agent nobody in particular created.
	everyAgentOf := func(projectID string) (bool, error) {
		p, err := s.project(ctx, projectID)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return allowed(Subject{Res: authz.Resource{Project: p, Agent: &authz.AgentRes{ProjectID: projectID}}}), nil
	}
	switch {
	case f.AgentID != "":
		subj, err := s.jobAgentSubject(ctx, a, f.ProjectID, f.AgentID, "")
		if err != nil {
			return false, err
		}
		if f.ProjectID != "" && subj.Res.Agent.ProjectID != f.ProjectID {
			return false, nil // no Job of that agent is in that project
		}
		return allowed(subj), nil
	case f.ProjectID != "":
		return everyAgentOf(f.ProjectID)
	case f.ProjectIDs != nil:
		var keep []string
		for _, id := range f.ProjectIDs {
			ok, err := everyAgentOf(id)
			if err != nil {
				return false, err
			}
			if ok {
				keep = append(keep, id)
			}
		}
		f.ProjectIDs = append([]string{}, keep...)
		return true, nil
	case allowed(Subject{Res: authz.Resource{Agent: &authz.AgentRes{}}}):
		return true, nil // every Job: a hub admin
	case c.Kind == authz.Agent:
		f.AgentID = c.ID
		return s.jobScope(ctx, a, f)
	case c.ProjectID != "":
		f.ProjectID = c.ProjectID
		return s.jobScope(ctx, a, f)
	}
	return false, nil
}

// UpdateJobWith decides on the Job as its request read it; the row the
// transaction reads must still be that Job's (its agent and project
// never change).
func (s *Store) UpdateJobWith(ctx context.Context, id string, fn func(*store.Job) error) (*store.Job, error) {
	a, err := s.decideJob(ctx, "UpdateJobWith", id)
	if err != nil {
		return nil, err
	}
	if a.system {
		return s.inner.UpdateJobWith(ctx, id, fn)
	}
	want, _ := a.seen.job(id)
	j, err := s.inner.UpdateJobWith(ctx, id, func(x *store.Job) error {
		if x.ProjectID != want.projectID || x.AgentID != want.agentID {
			return store.ErrNotFound
		}
		return fn(x)
	})
	if err == nil {
		a.seen.sawJob(j, true)
	}
	return j, err
}

func (s *Store) DeleteJob(ctx context.Context, id string) error {
	if _, err := s.decideJob(ctx, "DeleteJob", id); err != nil {
		return err
	}
	return s.inner.DeleteJob(ctx, id)
}

func (s *Store) ExpirePendingJobs(ctx context.Context, before time.Time, msg string) (int, error) {
	if _, err := gate(ctx, "ExpirePendingJobs"); err != nil {
		return 0, err
	}
	return s.inner.ExpirePendingJobs(ctx, before, msg)
}
