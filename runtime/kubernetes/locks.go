package kubernetes

import (
	"context"
	"sync"
)

// agentLocks serialises the lifecycle calls of one agent (a Start racing a
// Stop, say) while letting different agents proceed concurrently. Entries
// live only while held or awaited.
type agentLocks struct {
	mu sync.Mutex
	m  map[string]*agentLock
}

type agentLock struct {
	sem  chan struct{} // one slot, so that waiting can honour ctx
	refs int
}

func (l *agentLocks) lock(ctx context.Context, agentID string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*agentLock{}
	}
	e := l.m[agentID]
	if e == nil {
		e = &agentLock{sem: make(chan struct{}, 1)}
		l.m[agentID] = e
	}
	e.refs++
	l.mu.Unlock()
	select {
	case e.sem <- struct{}{}:
		return func() { <-e.sem; l.release(agentID, e) }, nil
	case <-ctx.Done():
		l.release(agentID, e)
		return nil, ctx.Err()
	}
}

func (l *agentLocks) release(agentID string, e *agentLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.m, agentID)
	}
}
