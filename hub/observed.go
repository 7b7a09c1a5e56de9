package hub

import (
	"hash/fnv"
	"sync"
)

// observed remembers, per agent, the newest broker stamp (ObservedAt) the
// Hub has applied, so that a status report overtaken on the way (a late
// exit event arriving after the answer to the next start) is dropped
// instead of rolling the agent back. It lives in memory: after a Hub
// restart the first report for an agent applies, which is right because
// the broker re-reads the state under the agent's lock before sending.
type observed struct {
	mu sync.Mutex
	m  map[string]int64
	// stripes serialize claim-and-write per agent, so that whoever finds
	// its report stale reads the newer report's committed result.
	stripes [64]sync.Mutex
}

// lock serializes status application for one agent (striped: bounded
// memory, rare false sharing).
func (o *observed) lock(agentID string) func() {
	h := fnv.New32a()
	h.Write([]byte(agentID))
	m := &o.stripes[h.Sum32()%uint32(len(o.stripes))]
	m.Lock()
	return m.Unlock
}

// fresh reports whether a status stamped at ts is not older than the
// newest applied one. A zero stamp (an older broker) always applies.
// Callers hold the agent's lock and call applied once the status is
// written: a write that fails (a cancelled request, a database error)
// must not make the next report of the same state look stale.
func (o *observed) fresh(agentID string, ts int64) bool {
	if ts == 0 {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return ts >= o.m[agentID]
}

// applied records that the status stamped at ts is written.
func (o *observed) applied(agentID string, ts int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]int64{}
	}
	if ts > o.m[agentID] {
		o.m[agentID] = ts
	}
}

func (o *observed) forget(agentID string) {
	o.mu.Lock()
	delete(o.m, agentID)
	o.mu.Unlock()
}
