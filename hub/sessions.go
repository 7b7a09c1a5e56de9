package hub

import (
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
}

// sessions maps broker IDs to their current control channel. A broker
// that reconnects replaces its old session; only the current session's
// end marks the broker offline, so a late-closing old socket can never
// flip a reconnected broker to offline (no online/offline split brain).
type sessions struct {
	mu sync.RWMutex
	m  map[string]*session
}

func newSessions() *sessions { return &sessions{m: map[string]*session{}} }

func (ss *sessions) get(brokerID string) *session {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.m[brokerID]
}

// put makes s current and returns the session it replaced, if any.
func (ss *sessions) put(s *session) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	old := ss.m[s.brokerID]
	ss.m[s.brokerID] = s
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
