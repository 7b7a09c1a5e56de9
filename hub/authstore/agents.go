package authstore

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// checkAgent decides a read of agent x (the record the call fetched) and
// records it as shown to the request.
func (s *Store) checkAgent(ctx context.Context, a *actor, m string, x *store.Agent) error {
	if a.system {
		return nil
	}
	p, err := s.project(ctx, x.ProjectID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	res := agentRes(x)
	if err := verdict(Decide(m, a.caller, Subject{Res: authz.Resource{Project: p, Agent: &res}})); err != nil {
		return err
	}
	a.seen.sawAgent(x, true)
	return nil
}

// createAgent decides a create of agent x with opts: agent.create in its
// project; a replace as a delete of the replaced agent; a key as the
// caller's own.
func (s *Store) createAgent(ctx context.Context, x *store.Agent, o store.CreateAgentOptions) (*actor, error) {
	a, err := actorOf(ctx)
	if err != nil || a.system {
		return a, err
	}
	p, err := s.project(ctx, x.ProjectID)
	if err != nil {
		return a, err
	}
	if err := verdict(Decide("CreateAgentWith", a.caller, Subject{Res: authz.Resource{Project: p}})); err != nil {
		return a, err
	}
	if o.Replace != nil {
		if _, err := s.decideAgent(ctx, "DeleteAgent", o.Replace.ID); err != nil {
			return a, err
		}
	}
	if o.Key != nil {
		if err := verdict(Decide("CompleteIdempotencyRecord", a.caller, Subject{KeyOwner: o.Key.Caller})); err != nil {
			return a, err
		}
	}
	return a, nil
}

func (s *Store) CreateAgent(ctx context.Context, x *store.Agent, reserveLimit *int) error {
	a, err := s.createAgent(ctx, x, store.CreateAgentOptions{})
	if err != nil {
		return err
	}
	if err := s.inner.CreateAgent(ctx, x, reserveLimit); err != nil {
		return err
	}
	a.seen.sawAgent(x, false)
	return nil
}

func (s *Store) CreateAgentWith(ctx context.Context, x *store.Agent, o store.CreateAgentOptions) (bool, error) {
	a, err := s.createAgent(ctx, x, o)
	if err != nil {
		return false, err
	}
	linked, err := s.inner.CreateAgentWith(ctx, x, o)
	if err != nil {
		return linked, err
	}
	if o.Replace != nil {
		a.seen.forgetAgent(o.Replace.ID)
	}
	a.seen.sawAgent(x, false)
	return linked, nil
}

// GetAgent checks the record it returns.
func (s *Store) GetAgent(ctx context.Context, id string) (*store.Agent, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	x, err := s.inner.GetAgent(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.checkAgent(ctx, a, "GetAgent", x); err != nil {
		return nil, err
	}
	return x, nil
}

func (s *Store) GetAgentBySlug(ctx context.Context, projectID, slug string) (*store.Agent, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	x, err := s.inner.GetAgentBySlug(ctx, projectID, slug)
	if err != nil {
		return nil, err
	}
	if err := s.checkAgent(ctx, a, "GetAgentBySlug", x); err != nil {
		return nil, err
	}
	return x, nil
}

// ListAgents narrows the filter (agentScope): a caller confined to one
// project lists that project's agents, so the store's total and cursor
// are the caller's.
func (s *Store) ListAgents(ctx context.Context, f store.AgentFilter, page store.Page) ([]*store.Agent, string, int, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, "", 0, err
	}
	if !a.system {
		var ok bool
		if f, ok = agentScope(a.caller, f); !ok {
			if _, err := store.DecodeCursor(page.Cursor); err != nil {
				return nil, "", 0, err
			}
			return []*store.Agent{}, "", 0, nil
		}
	}
	items, next, total, err := s.inner.ListAgents(ctx, f, page)
	if err == nil && !a.system {
		for _, x := range items {
			a.seen.sawAgent(x, true)
		}
	}
	return items, next, total, err
}

// writeAgent decides write m of agent x on the agent as its request saw
// it, then records x as written.
func (s *Store) writeAgent(ctx context.Context, m string, x *store.Agent, write func() error) error {
	a, err := s.decideAgent(ctx, m, x.ID)
	if err != nil {
		return err
	}
	if !a.system {
		if seen, ok := a.seen.agent(x.ID); ok && seen.res.ProjectID != x.ProjectID {
			// Agents never move between projects; a write that says so
			// would take the record out of the project it was decided in.
			return verdict(&authz.Refusal{Reason: "an agent stays in its project"})
		}
	}
	if err := write(); err != nil {
		return err
	}
	a.seen.sawAgent(x, false)
	return nil
}

func (s *Store) UpdateAgent(ctx context.Context, x *store.Agent) error {
	return s.writeAgent(ctx, "UpdateAgent", x, func() error { return s.inner.UpdateAgent(ctx, x) })
}

func (s *Store) UpdateAgentWith(ctx context.Context, x *store.Agent, o store.UpdateAgentOptions) error {
	return s.writeAgent(ctx, "UpdateAgentWith", x, func() error { return s.inner.UpdateAgentWith(ctx, x, o) })
}

func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	a, err := s.decideAgent(ctx, "DeleteAgent", id)
	if err != nil {
		return err
	}
	if err := s.inner.DeleteAgent(ctx, id); err != nil {
		return err
	}
	a.seen.forgetAgent(id)
	return nil
}

func (s *Store) RenewAgentToken(ctx context.Context, id string, fromGeneration int64, at time.Time) error {
	if _, err := decide(ctx, "RenewAgentToken", Subject{Res: authz.Resource{Agent: &authz.AgentRes{ID: id}}}); err != nil {
		return err
	}
	return s.inner.RenewAgentToken(ctx, id, fromGeneration, at)
}
