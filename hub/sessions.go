package hub

import (
	"context"
	"sync"
	"time"

	"github.com/scion-go/scion/wire"
)

// session is one live control channel to a broker.
type session struct {
	id          string
	brokerID    string
	conn        *wire.Conn
	connectedAt time.Time
	// ready is closed once the dispatches queued while the broker was
	// offline have been delivered on this session. Until then every other
	// command to the broker waits, so none overtakes a queued one.
	ready chan struct{}
	// ended is closed once the Hub has settled what the channel's end
	// means (endSession); wentOffline, written before, says whether it
	// marked the broker offline (false: a newer session replaced this one,
	// or this one never became current). Calls cut off by the end wait for
	// it to know whether to fail as offline or to go to the new session.
	ended       chan struct{}
	wentOffline bool
}

func newSession(id, brokerID string, conn *wire.Conn) *session {
	return &session{id: id, brokerID: brokerID, conn: conn, connectedAt: time.Now(),
		ready: make(chan struct{}), ended: make(chan struct{})}
}

// endedOffline reports whether sess has ended and its end marked its
// broker offline. For a call that failed because the channel closed under
// it, it waits (within ctx) for the Hub to settle the end, which happens
// right after the channel's last frame: so the caller learns the broker is
// offline the moment the Hub marks it so, and never waits longer.
func (sess *session) endedOffline(ctx context.Context) bool {
	select {
	case <-sess.conn.Done():
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

// sessions maps broker IDs to their current control channel. A broker
// that reconnects replaces its old session; only the current session's
// end marks the broker offline, so a late-closing old socket can never
// flip a reconnected broker to offline (no online/offline split brain).
type sessions struct {
	mu sync.RWMutex
	m  map[string]*session
	// changed is closed and replaced whenever a session becomes current,
	// for callers waiting for a broker to come back.
	changed chan struct{}
}

func newSessions() *sessions {
	return &sessions{m: map[string]*session{}, changed: make(chan struct{})}
}

func (ss *sessions) get(brokerID string) *session {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.m[brokerID]
}

// watch returns the broker's current session (or nil) and a channel that
// is closed when any session next becomes current.
func (ss *sessions) watch(brokerID string) (*session, <-chan struct{}) {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.m[brokerID], ss.changed
}

// put makes s current and returns the session it replaced, if any.
func (ss *sessions) put(s *session) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	old := ss.m[s.brokerID]
	ss.m[s.brokerID] = s
	close(ss.changed)
	ss.changed = make(chan struct{})
	return old
}

// remove drops s if it is still current and reports whether it was.
func (ss *sessions) remove(s *session) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m[s.brokerID] == s {
		delete(ss.m, s.brokerID)
		return true
	}
	return false
}

func (ss *sessions) count() int {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return len(ss.m)
}

func (ss *sessions) closeAll(reason string) {
	ss.mu.Lock()
	all := make([]*session, 0, len(ss.m))
	for _, s := range ss.m {
		all = append(all, s)
	}
	ss.mu.Unlock()
	for _, s := range all {
		_ = s.conn.Close(reason)
	}
}
