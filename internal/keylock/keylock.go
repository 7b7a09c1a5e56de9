// Package keylock gives one lock per key (an agent ID, a project ID): the
// operations on one key run one at a time, those on different keys run
// concurrently. Waiting honours a context. An entry lives only while it is
// held or awaited, so the map never grows with keys seen once.
package keylock

import (
	"context"
	"sync"
)

// Locks is a set of per-key locks. The zero value is ready to use.
type Locks struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	sem  chan struct{} // one slot, so that waiting can honour ctx
	refs int
}

// Lock waits for key's lock (or ctx) and returns the function that
// releases it.
func (l *Locks) Lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*entry{}
	}
	e := l.m[key]
	if e == nil {
		e = &entry{sem: make(chan struct{}, 1)}
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	select {
	case e.sem <- struct{}{}:
		return func() { <-e.sem; l.release(key, e) }, nil
	case <-ctx.Done():
		l.release(key, e)
		return nil, ctx.Err()
	}
}

func (l *Locks) release(key string, e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.m, key)
	}
}

// Len is how many keys are held or awaited (for tests).
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// Refs is how many callers hold or await key's lock (for tests).
func (l *Locks) Refs(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.m[key]; e != nil {
		return e.refs
	}
	return 0
}
