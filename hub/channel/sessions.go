package channel

import (
	"context"
	"sync"

	"github.com/scion-go/scion/wire"
)

// Session is one live control channel to a broker.
type Session struct {
	ID       string
	BrokerID string
	Conn     *wire.Conn
	// ready is closed once the dispatches queued while the broker was
	// offline have been delivered on this session. Until then every other
	// command to the broker waits, so none overtakes a queued one.
	ready chan struct{}
	// ended is closed once the Hub has settled what the channel's end
	// means (End); wentOffline, written before, says whether it
	// marked the broker offline (false: a newer session replaced this one,
	// or this one never became current). Calls cut off by the end wait for
	// it to know whether to fail as offline or to go to the new session.
	ended       chan struct{}
	wentOffline bool
}

// NewSession is the session of a channel just accepted: not current
// (Registry.Put makes it so), not ready (MarkReady), not ended.
func NewSession(id, brokerID string, conn *wire.Conn) *Session {
	return &Session{ID: id, BrokerID: brokerID, Conn: conn, ready: make(chan struct{}), ended: make(chan struct{})}
}

// MarkReady says the dispatches queued for the broker while it was
// offline have been delivered on this session: commands may go now. It
// is called once, by the queue's drain.
func (sess *Session) MarkReady() { close(sess.ready) }

// Ready is closed once MarkReady was called.
func (sess *Session) Ready() <-chan struct{} { return sess.ready }

// Done reports whether the channel has ended.
func (sess *Session) Done() bool {
	select {
	case <-sess.Conn.Done():
		return true
	default:
		return false
	}
}

// End records what the channel's end meant, once the Hub has settled it:
// wentOffline when it marked the broker offline (false: a newer session
// had replaced this one, or this one never became current). Calls cut
// off by the end wait for it (EndedOffline).
func (sess *Session) End(wentOffline bool) {
	sess.wentOffline = wentOffline
	close(sess.ended)
}

// EndedOffline reports whether sess has ended and its end marked its
// broker offline. For a call that failed because the channel closed under
// it, it waits (within ctx) for the Hub to settle the end, which happens
// right after the channel's last frame: so the caller learns the broker is
// offline the moment the Hub marks it so, and never waits longer.
func (sess *Session) EndedOffline(ctx context.Context) bool {
	select {
	case <-sess.Conn.Done():
	default:
		return false // still up: the failure was the broker's own answer
	}
	select {
	case <-sess.ended:
		return sess.wentOffline
	case <-ctx.Done():
		return false
	}
}

// Registry maps broker IDs to their current control channel. A broker
// that reconnects replaces its old session; only the current session's
// end marks the broker offline, so a late-closing old socket can never
// flip a reconnected broker to offline (no online/offline split brain).
type Registry struct {
	mu sync.RWMutex
	m  map[string]*Session
	// changed is closed and replaced whenever a session becomes current,
	// for callers waiting for a broker to come back.
	changed chan struct{}
}

// NewRegistry is an empty registry.
func NewRegistry() *Registry {
	return &Registry{m: map[string]*Session{}, changed: make(chan struct{})}
}

// Get is the broker's current session, or nil.
func (ss *Registry) Get(brokerID string) *Session {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.m[brokerID]
}

// Watch returns the broker's current session (or nil) and a channel that
// is closed when any session next becomes current.
func (ss *Registry) Watch(brokerID string) (*Session, <-chan struct{}) {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.m[brokerID], ss.changed
}

// Put makes s current and returns the session it replaced, if any.
func (ss *Registry) Put(s *Session) *Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	old := ss.m[s.BrokerID]
	ss.m[s.BrokerID] = s
	close(ss.changed)
	ss.changed = make(chan struct{})
	return old
}

// Remove drops s if it is still current and reports whether it was.
func (ss *Registry) Remove(s *Session) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m[s.BrokerID] == s {
		delete(ss.m, s.BrokerID)
		return true
	}
	return false
}

// Count is the number of brokers with a current session.
func (ss *Registry) Count() int {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return len(ss.m)
}

// CloseAll closes every current session's channel with reason.
func (ss *Registry) CloseAll(reason string) {
	ss.mu.Lock()
	all := make([]*Session, 0, len(ss.m))
	for _, s := range ss.m {
		all = append(all, s)
	}
	ss.mu.Unlock()
	for _, s := range all {
		_ = s.Conn.Close(reason)
	}
}
