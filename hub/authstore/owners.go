package authstore

import (
	"context"
	"sync"

	"github.com/scion-go/scion/store"
)

// ownersMax bounds the owner cache: a Hub with more projects reads an
// owner again after the cache is emptied, nothing worse.
const ownersMax = 10000

// owners caches projects' owners by ID. A project's owner (CreatedBy) is
// written at its create and never changed (UpdateProject leaves it), and
// IDs are never reused, so an entry is never stale: the decisions that
// need an owner (project.update, agent.lifecycle for the project's
// owner) cost no read once the project has been seen.
type owners struct {
	mu  sync.Mutex
	max int
	m   map[string]string
}

func newOwners(max int) *owners { return &owners{max: max, m: map[string]string{}} }

func (o *owners) get(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.m[id]
	return v, ok
}

func (o *owners) put(p *store.Project) {
	if p == nil || p.ID == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.m) >= o.max {
		clear(o.m)
	}
	o.m[p.ID] = p.CreatedBy
}

func (o *owners) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, id)
}

// owner is project id's owner, from the cache or read once.
func (s *Store) owner(ctx context.Context, id string) (string, error) {
	if v, ok := s.owners.get(id); ok {
		return v, nil
	}
	p, err := s.inner.GetProject(ctx, id)
	if err != nil {
		return "", err
	}
	if p.ID != id { // GetProject falls back to names: an ID is not one
		return "", store.ErrNotFound
	}
	s.owners.put(p)
	return p.CreatedBy, nil
}
