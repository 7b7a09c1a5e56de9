package authstore

import (
	"context"
	"errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// Store is a store.Store that decides every call for the actor of its
// context (see the package doc) before, or on the records of, the call to
// the store it wraps.
type Store struct {
	inner  store.Store
	owners *owners
}

var _ store.Store = (*Store)(nil)

// New wraps inner. The Hub keeps only the wrapper.
func New(inner store.Store) *Store {
	return &Store{inner: inner, owners: newOwners(ownersMax)}
}

// verdict turns a decision into the error of the call: nil, not found
// (store.ErrNotFound, as for a record that does not exist), or forbidden
// (api.Forbidden with the rule's reason: 403 through storeerr.Map, which
// passes API errors on).
func verdict(ref *authz.Refusal) error {
	switch {
	case ref == nil:
		return nil
	case ref.Hidden:
		return store.ErrNotFound
	}
	return api.Forbidden("%s", ref.Reason)
}

// decide is Decide for ctx's actor: nil for the system, the verdict for a
// caller, the actor's error for a context without one.
func decide(ctx context.Context, m string, s Subject) (*actor, error) {
	a, err := actorOf(ctx)
	if err != nil || a.system {
		return a, err
	}
	return a, verdict(Decide(m, a.caller, s))
}

// gate is decide for a call that names no record before it runs: the
// system's alone, or anyone's.
func gate(ctx context.Context, m string) (*actor, error) { return decide(ctx, m, Subject{}) }

// project is project id as authorization sees it, its owner from the
// cache (read once from the store: CreatedBy never changes).
func (s *Store) project(ctx context.Context, id string) (*authz.Project, error) {
	if id == "" {
		return nil, nil
	}
	owner, err := s.owner(ctx, id)
	if err != nil {
		return nil, err
	}
	return &authz.Project{ID: id, Owner: owner}, nil
}

// agentSubject is agent id as its request last saw it (else as stored),
// with its project: what a write of it is decided on. Not the record the
// write carries: its delegator or role may be what the write changes.
func (s *Store) agentSubject(ctx context.Context, a *actor, id string) (Subject, error) {
	seen, ok := a.seen.agent(id)
	if !ok {
		x, err := s.inner.GetAgent(ctx, id)
		if err != nil {
			return Subject{}, err
		}
		a.seen.sawAgent(x, false)
		seen = agentSeen{res: agentRes(x)}
	}
	p, err := s.project(ctx, seen.res.ProjectID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Subject{}, err
	}
	res := seen.res
	return Subject{Res: authz.Resource{Project: p, Agent: &res}}, nil
}

// decideAgent decides method m on agent id for ctx's actor.
func (s *Store) decideAgent(ctx context.Context, m, id string) (*actor, error) {
	a, err := actorOf(ctx)
	if err != nil || a.system {
		return a, err
	}
	subj, err := s.agentSubject(ctx, a, id)
	if err != nil {
		return a, err
	}
	return a, verdict(Decide(m, a.caller, subj))
}

// Ping and Close touch no record: the readiness probe pings with no
// caller at all.
func (s *Store) Ping(ctx context.Context) error { return s.inner.Ping(ctx) }
func (s *Store) Close() error                   { return s.inner.Close() }
