package transport

import (
	"container/list"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scion-go/scion/api"
)

// ConnLimiter is the Hub's listener: it caps the connections open from
// one client address and in all, so that no client (nor all of them
// together) can use up the process's file descriptors, which the
// database and the brokers' channels need too.
//
// When the global cap is reached, a new connection makes room by closing
// the connection that has been quiet longest (an idle keep-alive, or one
// that has not finished sending its request headers), if it has been
// quiet for at least minQuiet; failing that, the request body in flight
// with the lowest rate (connlimit_uploads.go), among those past minQuiet
// if any is, else among those past uploadGrace. A connection serving a
// request or a stream (logs -f, exec, attach, a broker's control channel)
// is never closed to make room. Bodies must keep arriving (bodyRules),
// and one caller may keep only callers.cap requests in progress
// (connlimit_callers.go). So neither slow headers, idle connections nor
// slow bodies, from one address or one signed-in caller, can lock a
// signed-in client out.
type ConnLimiter struct {
	net.Listener
	perAddr, total int
	minQuiet       time.Duration
	uploadGrace    time.Duration // no body younger is closed to make room
	log            *slog.Logger
	now            func() time.Time

	body bodyRules // how fast a request body must arrive

	mu      sync.Mutex
	open    int
	byAddr  map[string]int
	quiet   list.List                // of *limitedConn, new or idle, oldest first
	uploads map[*limitedConn]*upload // connections receiving a request body

	// cmu guards callers, apart from mu: every signed-in request takes
	// it, and the accept loop must not wait on them.
	cmu     sync.Mutex
	callers callerSlots // busy connections by caller

	refusedAddr, refusedTotal, evicted atomic.Int64
	// evictedUploads of evicted were bodies in flight; slowBodies were
	// closed by bodyRules; refusedCaller were answered 429 for their
	// caller's cap.
	evictedUploads, slowBodies, refusedCaller atomic.Int64
	lastLog                                   atomic.Int64 // unix nanos of the last refusal logged
}

// defaultMinQuiet protects a connection that has just opened (or just
// answered) from being closed before its client sends its request.
const defaultMinQuiet = time.Second

// defaultUploadGrace is the least a body has been arriving before it may
// be closed to make room when every body is younger than minQuiet: time
// for its handler to read its first bytes, so that it has a rate. Short,
// because while every body is that young a newcomer is refused.
const defaultUploadGrace = 200 * time.Millisecond

// NewConnLimiter wraps ln. perAddr or total 0 means no such cap.
func NewConnLimiter(ln net.Listener, perAddr, total int, log *slog.Logger) *ConnLimiter {
	if log == nil {
		log = slog.Default()
	}
	return &ConnLimiter{Listener: ln, perAddr: perAddr, total: total, minQuiet: defaultMinQuiet, uploadGrace: defaultUploadGrace, log: log,
		now: time.Now, byAddr: map[string]int{}, uploads: map[*limitedConn]*upload{}, callers: callerSlots{n: map[string]int{}}}
}

// connVerdict is what admitConn decides for a new connection.
type connVerdict int

const (
	connAdmit     connVerdict = iota
	connAddrFull              // the client address holds its cap: refuse
	connTotalFull             // the Hub holds its cap: make room or refuse
)

// admitConn decides on a new connection from an address that holds
// addrOpen of the open connections. A cap of 0 is no cap.
func admitConn(addrOpen, open, perAddr, total int) connVerdict {
	switch {
	case perAddr > 0 && addrOpen >= perAddr:
		return connAddrFull
	case total > 0 && open >= total:
		return connTotalFull
	}
	return connAdmit
}

// Accept returns the next connection within the caps. Connections over a
// cap are answered 429 and closed here; they never reach the server.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := connKey(c)
		l.mu.Lock()
		v := admitConn(l.byAddr[key], l.open, l.perAddr, l.total)
		var victim *limitedConn
		fromUpload := false
		if v == connTotalFull {
			now := l.now()
			if victim = l.takeQuietLocked(now); victim == nil {
				victim = l.takeSlowestUploadLocked(now)
				fromUpload = victim != nil
			}
		}
		l.mu.Unlock()
		switch {
		case v == connAddrFull:
			l.refusedAddr.Add(1)
			l.refuse(c, refusalAddr, "too many connections from this address")
			continue
		case v == connTotalFull && victim == nil:
			l.refusedTotal.Add(1)
			l.refuse(c, refusalTotal, "the Hub is at its connection limit")
			continue
		case victim != nil:
			l.evicted.Add(1)
			if fromUpload {
				l.evictedUploads.Add(1)
			}
			_ = victim.Close() // releases its slot before this one takes it
		}
		return l.admit(c, key), nil
	}
}

func (l *ConnLimiter) admit(c net.Conn, key string) *limitedConn {
	lc := &limitedConn{Conn: c, l: l, key: key}
	l.mu.Lock()
	l.open++
	l.byAddr[key]++
	lc.since = l.now()
	lc.elem = l.quiet.PushBack(lc)
	l.mu.Unlock()
	return lc
}

// takeQuietLocked removes and returns the connection quiet longest, if it
// has been quiet for minQuiet. Called with l.mu held.
func (l *ConnLimiter) takeQuietLocked(now time.Time) *limitedConn {
	e := l.quiet.Front()
	if e == nil {
		return nil
	}
	lc := e.Value.(*limitedConn)
	if now.Sub(lc.since) < l.minQuiet {
		return nil
	}
	l.quiet.Remove(e)
	lc.elem = nil
	return lc
}

// rawRefusal is the answer written on a refused connection before it is
// closed: the standard error body, so a client sees why.
func rawRefusal(msg string) []byte {
	e := api.Errorf(api.CodeRateLimited, "%s; retry later", msg)
	body, _ := json.Marshal(api.ErrorBody{Error: e})
	return []byte(fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s\n", e.Status, http.StatusText(e.Status), len(body)+1, body))
}

var (
	refusalAddr  = rawRefusal("too many connections from this address")
	refusalTotal = rawRefusal("the Hub is at its connection limit")
)

// refuse writes the 429 (never blocking: a fresh socket's send buffer is
// empty, and the deadline covers a peer that does not read) and closes.
func (l *ConnLimiter) refuse(c net.Conn, b []byte, why string) {
	_ = c.SetWriteDeadline(l.now().Add(100 * time.Millisecond))
	_, _ = c.Write(b)
	_ = c.Close()
	l.logCounts("connections refused", why)
}

// logCounts logs msg with the limiter's counts, once per 10 s at most: a
// flood must not flood the log.
func (l *ConnLimiter) logCounts(msg, why string) {
	now := l.now().UnixNano()
	if last := l.lastLog.Load(); now-last > int64(10*time.Second) && l.lastLog.CompareAndSwap(last, now) {
		st := l.Stats()
		l.log.Warn(msg, "reason", why, "open", st.Open,
			"refused_per_address", st.RefusedPerAddr, "refused_total_cap", st.RefusedTotal, "closed_to_make_room", st.Evicted,
			"uploads_closed_to_make_room", st.EvictedUploads, "bodies_too_slow", st.SlowBodies, "refused_per_caller", st.RefusedPerCaller)
	}
}

// ConnState is the http.Server hook that tells the limiter which
// connections are quiet (may be closed to make room) and which are busy.
func (l *ConnLimiter) ConnState(c net.Conn, st http.ConnState) {
	lc, ok := netConnOf(c).(*limitedConn)
	if !ok {
		return
	}
	if st == http.StateNew {
		return // quiet since Accept
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.elem != nil {
		l.quiet.Remove(lc.elem)
		lc.elem = nil
	}
	if st != http.StateActive {
		// Idle, hijacked (a WebSocket) or closed: no body in flight, so
		// never closed as a slow upload.
		delete(l.uploads, lc)
	}
	if st == http.StateIdle && !lc.closed {
		lc.since = l.now()
		lc.elem = l.quiet.PushBack(lc)
	}
}

// ConnStats count what the limiter did.
type ConnStats struct {
	Open           int
	RefusedPerAddr int64
	RefusedTotal   int64
	// Evicted counts the connections closed to make room; EvictedUploads
	// those of them that were receiving a request body.
	Evicted, EvictedUploads int64
	// SlowBodies are the request bodies cut by bodyRules.
	SlowBodies int64
	// RefusedPerCaller are the requests answered 429 for their caller's cap.
	RefusedPerCaller int64
}

// Stats is a snapshot of the counts.
func (l *ConnLimiter) Stats() ConnStats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	return ConnStats{Open: open, RefusedPerAddr: l.refusedAddr.Load(), RefusedTotal: l.refusedTotal.Load(), Evicted: l.evicted.Load(),
		EvictedUploads: l.evictedUploads.Load(), SlowBodies: l.slowBodies.Load(), RefusedPerCaller: l.refusedCaller.Load()}
}

// limitedConn holds one slot until it is closed.
type limitedConn struct {
	net.Conn
	l      *ConnLimiter
	key    string
	elem   *list.Element // in l.quiet while quiet; guarded by l.mu
	since  time.Time     // when it became quiet; guarded by l.mu
	closed bool          // guarded by l.mu
	once   sync.Once
	// serverDeadline is the read deadline net/http last set (unix nanos,
	// 0: none): a body's own deadlines never reach past it.
	serverDeadline atomic.Int64
}

// SetReadDeadline is net/http's: it is recorded so that the body rules
// keep the server's ReadTimeout (see trackedBody).
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	var n int64
	if !t.IsZero() {
		n = t.UnixNano()
	}
	c.serverDeadline.Store(n)
	return c.Conn.SetReadDeadline(t)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		c.closed = true
		if c.elem != nil {
			l.quiet.Remove(c.elem)
			c.elem = nil
		}
		delete(l.uploads, c)
		l.open--
		if l.byAddr[c.key]--; l.byAddr[c.key] <= 0 {
			delete(l.byAddr, c.key)
		}
		l.mu.Unlock()
	})
	return err
}

// connKey is the limits' key of a connection's client address.
func connKey(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return addrKey(a.IP, a.String())
	}
	return c.RemoteAddr().String()
}
