package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// forceDeleteConcurrency bounds the agent deletes one forced project
// delete has in flight.
const forceDeleteConcurrency = 8

// handleDeleteProject is DELETE /projects/{project}[?force=true]. Without
// force it is refused while the project has agents (the store refuses the
// delete). With force the project's agent records are removed first, each
// with a best-effort delete on its broker (plan.ProjectAgentDelete), then
// the project as without force, with its brokers' cleanup. The records go
// one by one, each after its broker's delete: a Hub killed midway leaves
// the project with the agents not yet removed, and the same request
// again finishes the job (a broker that already deleted a workload
// answers the repeat, under the same key, from its record or as not
// found).
func (s *Server) handleDeleteProject(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	p, err := s.loadProject(ctx, c, r.PathValue("project"), authz.ProjectDelete)
	if err != nil {
		return 0, nil, err
	}
	force, err := forceParam(r)
	if err != nil {
		return 0, nil, err
	}
	// The providers are read before the delete drops their links: they
	// are the brokers that may hold resources of the project's.
	providers, err := s.store.ProjectProviders(ctx, p.ID)
	if err != nil {
		return 0, nil, err
	}
	var agentsLeft []api.ProjectResource
	if force {
		s.log.Warn("project delete with force: removing its agent records with best-effort runtime deletes", "project", p.Name, "project_id", p.ID, "by", c.Principal())
		// Not cancelled with the request: a caller that goes away does not
		// turn the brokers' deletes into failures that leave workloads.
		if agentsLeft, err = s.deleteProjectAgents(context.WithoutCancel(ctx), c, p); err != nil {
			return 0, nil, withLeft(err, agentsLeft)
		}
	}
	if err := s.store.DeleteProject(context.WithoutCancel(ctx), p.ID); err != nil {
		if isConflict(err) { // the store refuses the delete of a project that has agents
			err = projectHasAgents(p, force)
		}
		return 0, nil, withLeft(storeerr.Map(err, api.CodeProjectNotFound, fmt.Sprintf("project %q", p.Name)), agentsLeft)
	}
	out := api.ProjectDeleted{ID: p.ID, Name: p.Name}
	out.Removed, out.Queued, out.Left = s.cleanupProject(ctx, c, p.ID, providers)
	out.Left = append(out.Left, agentsLeft...)
	sortResources(out.Left)
	return http.StatusOK, out, nil
}

// projectHasAgents is the refusal of a project delete the store met with
// agents in the project: without force, the force option; with force,
// agents created while it ran.
func projectHasAgents(p *store.Project, force bool) error {
	if force {
		return api.Conflict(api.CodeConflict, "agents were created in project %q while it was being deleted; try again", p.Name)
	}
	return api.Conflict(api.CodeConflict,
		"project %q still has agents; delete them first, or delete the project with --force (force=true), which removes their records with best-effort runtime deletes", p.Name)
}

// maxLeftNamed bounds the workloads a failed forced delete names in its
// message (all of them are in its details).
const maxLeftNamed = 10

// withLeft is err, the failure of a forced project delete after it
// removed agent records, with the workloads those may have left: the
// next attempt no longer knows of them (their records are gone), so this
// answer is the only one that can list them besides the Hub's log. An
// error that is not an API error (the database's) passes unchanged.
func withLeft(err error, left []api.ProjectResource) error {
	var ae *api.Error
	if len(left) == 0 || !errors.As(err, &ae) {
		return err
	}
	sortResources(left)
	var named []string
	for i, l := range left {
		if i == maxLeftNamed {
			named = append(named, fmt.Sprintf("and %d more (the Hub's log names each)", len(left)-i))
			break
		}
		b := l.BrokerID
		if l.Broker != "" {
			b = fmt.Sprintf("%q (%s)", l.Broker, l.BrokerID)
		}
		named = append(named, fmt.Sprintf("%s on runtime broker %s: %s", l.Resource, b, l.Reason))
	}
	e := ae.WithDetail("left", left)
	e.Message += "; the agent records already removed may have left workloads, which the next attempt no longer lists: " + strings.Join(named, "; ")
	return e
}

// deleteProjectAgents removes every agent record of project p for a
// forced project delete and returns the workloads that may be left. Only
// a database error stops it (what it removed stays removed: the request
// again continues).
func (s *Server) deleteProjectAgents(ctx context.Context, c *Caller, p *store.Project) ([]api.ProjectResource, error) {
	var agents []*store.Agent
	page := store.Page{Limit: 1000}
	for {
		got, next, _, err := s.store.ListAgents(ctx, store.AgentFilter{ProjectID: p.ID}, page)
		if err != nil {
			return nil, err
		}
		agents = append(agents, got...)
		if next == "" {
			break
		}
		page.Cursor = next
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		left     []api.ProjectResource
		firstErr error
	)
	sem := make(chan struct{}, forceDeleteConcurrency)
	for _, a := range agents {
		wg.Add(1)
		go func(a *store.Agent) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			l, err := s.forceDeleteAgent(ctx, c, p, a)
			mu.Lock()
			defer mu.Unlock()
			if l != nil {
				left = append(left, *l)
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}(a)
	}
	wg.Wait()
	return left, firstErr
}

// forceDeleteAgent removes agent a's record in a forced project delete,
// after its broker's delete when plan.ProjectAgentDelete sends one, and
// returns its workload's entry when it may be left.
func (s *Server) forceDeleteAgent(ctx context.Context, c *Caller, p *store.Project, a *store.Agent) (*api.ProjectResource, error) {
	reach, err := s.loadReach(ctx, a)
	if err != nil {
		return nil, err
	}
	dp := plan.ProjectAgentDelete(plan.ProjectAgentInput{Reach: reach, Online: a.BrokerID != "" && s.disp.Online(a.BrokerID)})
	log := s.log.With("agent", a.Slug, "agent_id", a.ID, "project", p.Name, "project_id", p.ID, "broker_id", a.BrokerID, "by", c.Principal())
	switch {
	case dp.Misplaced != nil:
		e := api.AsError(dp.Misplaced)
		log.Error("project delete with force removed the record of an agent whose placement is inconsistent without reaching any runtime broker: its workload may still run on its pinned runtime broker; remove it there by hand",
			"pinned_broker_id", a.Pin.BrokerID, "pinned_runtime_target", a.Pin.RuntimeTarget.String(), "code", e.Code)
	case dp.Dispatch:
		err := s.disp.Dispatch(ctx, a.BrokerID, wire.MethodAgentDelete, wire.AgentRef{AgentID: a.ID, RunID: a.RunID, Pin: a.Pin}, nil, dp.Key)
		if err != nil && !api.IsCode(err, api.CodeAgentNotFound) {
			e := api.AsError(err)
			log.Warn("project delete with force: the runtime broker's delete of an agent failed; its record is removed and its workload may be left", "err", e)
			dp.Left = "the runtime broker's delete failed: " + strings.TrimSpace(httpapi.ScrubAddresses(e.Message)) + "; remove its workload on that broker by hand"
		}
	case dp.Left != "":
		log.Warn("project delete with force removed an agent record without reaching its runtime broker: " + dp.Left)
	}
	if err := s.store.DeleteAgent(context.WithoutCancel(ctx), a.ID); err != nil && !isNotFound(err) {
		return nil, err
	}
	s.observed.forget(a.ID)
	if dp.Left == "" {
		return nil, nil
	}
	l := plan.ProjectAgentLeft(a, reach.Broker, dp.Left)
	return &l, nil
}
