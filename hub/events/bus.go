// Package events tells the Hub's live views (the web page's server-sent
// events) what changed: a store decorator (Store) publishes the kind and
// ID of every record its writes change on a Bus, and each subscriber
// reads the record again with its own caller, so a view never shows what
// its caller may not read. Nothing polls: a view changes when the Hub's
// own writes do.
//
// It knows records only by kind and ID. Of ours it imports only store
// (internal/deptest holds the rule).
package events

import (
	"sync"
	"sync/atomic"
)

// Kinds of records.
const (
	KindAgent   = "agent"
	KindBroker  = "broker"
	KindProject = "project"
)

// Event is one record changed: its kind and ID ("" for "some record of
// this kind", such as a broker's running count after a slot moved), and
// whether it is gone.
type Event struct {
	Kind    string
	ID      string
	Deleted bool
}

// subBuffer is how many events a subscriber may fall behind by before it
// is told to start over (Sub.Lagged): a slow browser never slows a write.
const subBuffer = 256

// Bus fans events out to subscribers. Publish never blocks.
type Bus struct {
	mu   sync.Mutex
	subs map[*Sub]struct{}
}

// Sub is one subscriber: its events, and whether it missed some.
type Sub struct {
	C      chan Event
	lagged atomic.Bool
	// Wake receives (without blocking) when Lagged becomes true, so a
	// reader waiting on C learns of it.
	Wake chan struct{}
}

// Lagged reports, and clears, that events were dropped for s: it must
// read everything it shows again.
func (s *Sub) Lagged() bool { return s.lagged.Swap(false) }

// Subscribe adds a subscriber; Unsubscribe it when done.
func (b *Bus) Subscribe() *Sub {
	s := &Sub{C: make(chan Event, subBuffer), Wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[*Sub]struct{}{}
	}
	b.subs[s] = struct{}{}
	return s
}

func (b *Bus) Unsubscribe(s *Sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, s)
}

// Subscribers is how many subscribers there are.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Publish hands e to every subscriber that has room, and marks the
// others lagged.
func (b *Bus) Publish(e Event) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.C <- e:
		default:
			if !s.lagged.Swap(true) {
				select {
				case s.Wake <- struct{}{}:
				default:
				}
			}
		}
	}
}
