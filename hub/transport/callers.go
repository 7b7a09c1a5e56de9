package transport

import "context"

// Busy connections per caller. The per-address cap does not see a caller
// behind a proxy (every client has the proxy's address) nor one caller
// on many addresses; the identity a request authenticated as does. A
// caller is its principal (authz.Caller.Principal): a user with all its
// access tokens, an agent, a broker. Its requests in progress, streams
// included, count; the one over the cap is answered 429 before its body
// is read. A broker's control channel authenticates on its own route and
// does not count.

// callerSlots counts busy connections by caller, under a cap (0: none).
// It does no locking: the ConnLimiter's cmu guards it.
type callerSlots struct {
	cap int
	n   map[string]int
}

// take counts one more busy connection of key, unless key holds the cap.
func (c *callerSlots) take(key string) bool {
	if c.cap > 0 && c.n[key] >= c.cap {
		return false
	}
	c.n[key]++
	return true
}

// give counts one busy connection of key less.
func (c *callerSlots) give(key string) {
	if c.n[key]--; c.n[key] <= 0 {
		delete(c.n, key)
	}
}

// holdCaller takes a busy slot of caller for the request on lc; release
// gives it back. False: the caller holds its cap.
func (l *ConnLimiter) holdCaller(caller string) (release func(), ok bool) {
	if l.callers.cap <= 0 {
		return func() {}, true
	}
	l.cmu.Lock()
	ok = l.callers.take(caller)
	l.cmu.Unlock()
	if !ok {
		l.refusedCaller.Add(1)
		l.logCounts("requests refused", "a caller at its cap of busy connections")
		return nil, false
	}
	return func() {
		l.cmu.Lock()
		l.callers.give(caller)
		l.cmu.Unlock()
	}, true
}

// HoldCaller takes a busy slot of caller for the request whose context
// is ctx; release gives it back. A request that did not come through a
// ConnLimiter needs none. False: the caller holds its cap, which is
// returned for the answer.
func HoldCaller(ctx context.Context, caller string) (release func(), limit int, ok bool) {
	lc := limitedConnOf(ctx)
	if lc == nil {
		return func() {}, 0, true
	}
	release, ok = lc.l.holdCaller(caller)
	return release, lc.l.callers.cap, ok
}
