package transport

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Request bodies in flight. The read timeout alone let a signed-in caller
// hold a connection for 30 s with a body sent one byte every 2 s, and a
// connection receiving a body counted as busy, so a few hundred of them
// locked everyone else out at the global cap (issue 27). Now:
//
//   - a body must keep arriving: no byte for bodyRules.Stall, or less
//     than MinRate on average once Stall has passed, and the connection
//     is closed (as nginx's client_body_timeout, with a rate as Apache's
//     mod_reqtimeout);
//   - at the global cap, with no quiet connection to close, the body in
//     flight with the lowest rate is closed to make room (slowestUpload),
//     one under minQuiet old only when every body is, never one under
//     uploadGrace;
//   - one caller keeps at most ServeLimits.MaxConnsPerCaller requests in progress
//     (connlimit_callers.go).
//
// Only bodies are uploads: a stream's response (logs -f, exec after its
// request body, SSE), a WebSocket (attach, a broker's control channel)
// and a handler at work are not, and are never closed as slow uploads.

// bodyRules is how fast a request body must arrive. Zero fields are no
// rule.
type bodyRules struct {
	// Stall is the longest a body may go without a byte arriving, and the
	// grace before MinRate applies.
	Stall time.Duration
	// MinRate is the slowest average, in bytes per second since the end
	// of the headers, once Stall has passed.
	MinRate int64
}

// deadline is when the next byte of a body must have arrived: the body
// began at start, has received n bytes, the last at last (start when
// none), and the server's own read deadline is server (zero: none; it is
// the whole request's, --read-timeout, and is never extended). Zero is no
// deadline.
func (r bodyRules) deadline(start, last time.Time, n int64, server time.Time) time.Time {
	d := server
	earlier := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if r.Stall > 0 {
		earlier(last.Add(r.Stall))
	}
	if r.MinRate > 0 {
		// n bytes are enough until start + Stall + n/MinRate.
		secs := float64(n) / float64(r.MinRate)
		if secs < float64(math.MaxInt64/2)/float64(time.Second) {
			earlier(start.Add(r.Stall + time.Duration(secs*float64(time.Second))))
		}
	}
	return d
}

// upload is a request body in flight on a connection.
type upload struct {
	start time.Time
	bytes atomic.Int64
}

// uploadView is what the choice of an upload to close knows of one.
type uploadView struct {
	start time.Time // the end of its headers
	bytes int64     // body bytes received so far
}

// slowestUpload picks the upload to close at the global cap: the one with
// the lowest average rate since its headers, among those running for at
// least settled (a body that has only just begun has little rate to
// judge, and a client that sent its headers a moment ago is not judged on
// them). Failing any, it is the slowest of those past grace: a caller
// whose slow bodies are closed and reopened as fast as the Hub closes
// them keeps every one younger than settled, and sparing them all would
// refuse every newcomer (issue 27: the signed-in client got 429 "at its
// connection limit" while 40 trickled bodies, all under 1 s old, held the
// Hub). Only one younger than grace, whose handler may not have read a
// byte yet, is never closed. Ties go to the oldest. -1: none may be
// closed.
func slowestUpload(ups []uploadView, now time.Time, settled, grace time.Duration) int {
	if i := lowestRate(ups, now, settled); i >= 0 {
		return i
	}
	return lowestRate(ups, now, grace)
}

// lowestRate is the upload with the lowest average rate among those at
// least minAge old, ties to the oldest; -1: none is.
func lowestRate(ups []uploadView, now time.Time, minAge time.Duration) int {
	best, bestRate := -1, 0.0
	for i, u := range ups {
		age := now.Sub(u.start)
		if age < minAge || age <= 0 {
			continue
		}
		rate := float64(u.bytes) / age.Seconds()
		if best < 0 || rate < bestRate || (rate == bestRate && u.start.Before(ups[best].start)) {
			best, bestRate = i, rate
		}
	}
	return best
}

// takeSlowestUploadLocked removes and returns the connection whose body
// arrives slowest (slowestUpload), or nil. Called with l.mu held.
func (l *ConnLimiter) takeSlowestUploadLocked(now time.Time) *limitedConn {
	if len(l.uploads) == 0 {
		return nil
	}
	conns := make([]*limitedConn, 0, len(l.uploads))
	views := make([]uploadView, 0, len(l.uploads))
	for lc, u := range l.uploads {
		conns = append(conns, lc)
		views = append(views, uploadView{start: u.start, bytes: u.bytes.Load()})
	}
	i := slowestUpload(views, now, l.minQuiet, l.uploadGrace)
	if i < 0 {
		return nil
	}
	delete(l.uploads, conns[i])
	return conns[i]
}

type connCtxKey struct{}

// connContext is the http.Server's ConnContext: a handler finds its
// connection (limitedConnOf) to track its body and its caller.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := netConnOf(c).(*limitedConn); ok {
		return context.WithValue(ctx, connCtxKey{}, lc)
	}
	return ctx
}

// limitedConnOf is the connection a request came on, nil when it did
// not come through a ConnLimiter (a test's httptest server).
func limitedConnOf(ctx context.Context) *limitedConn {
	lc, _ := ctx.Value(connCtxKey{}).(*limitedConn)
	return lc
}

// trackBodies wraps every request body of h in a trackedBody.
func (l *ConnLimiter) trackBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc := limitedConnOf(r.Context())
		if lc == nil || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		b := &trackedBody{rc: r.Body, lc: lc, up: &upload{start: l.now()}}
		b.last = b.up.start
		l.mu.Lock()
		if !lc.closed {
			l.uploads[lc] = b.up
		}
		l.mu.Unlock()
		defer b.end()
		r.Body = b
		h.ServeHTTP(w, r)
	})
}

// errBodyTooSlow is what a handler reads from a body cut by bodyRules
// (its connection is closed: no answer is sent).
var errBodyTooSlow = errors.New("request body arrived too slowly; the connection was closed")

// trackedBody counts a body's bytes for the eviction choice and gives
// each read the deadline of bodyRules. It is read by the handler's
// goroutine only.
type trackedBody struct {
	rc    io.ReadCloser
	lc    *limitedConn
	up    *upload
	last  time.Time // when the last byte arrived
	ended bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	if b.ended {
		return b.rc.Read(p)
	}
	l := b.lc.l
	var server time.Time
	if n := b.lc.serverDeadline.Load(); n != 0 {
		server = time.Unix(0, n)
	}
	dl := l.body.deadline(b.up.start, b.last, b.up.bytes.Load(), server)
	// Set on the raw connection, so that the server's own deadline stays
	// recorded. (Never after a read: the read that reaches the end starts
	// net/http's background read, which clears the deadline itself.)
	_ = b.lc.Conn.SetReadDeadline(dl)
	n, err := b.rc.Read(p)
	if n > 0 {
		b.up.bytes.Add(int64(n))
		b.last = l.now()
	}
	if err == nil {
		return n, nil
	}
	b.end()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && (server.IsZero() || dl.Before(server)) {
		// Our rule, not the read timeout: close, so that neither the
		// handler's answer nor net/http's discard of the rest waits on it.
		l.slowBodies.Add(1)
		_ = b.lc.Close()
		l.logCounts("request body too slow", "a request body arrived too slowly")
		return n, errBodyTooSlow
	}
	return n, err
}

func (b *trackedBody) Close() error {
	b.end()
	return b.rc.Close()
}

// end: the body is no longer in flight (read to its end, failed, or its
// handler returned).
func (b *trackedBody) end() {
	if b.ended {
		return
	}
	b.ended = true
	l := b.lc.l
	l.mu.Lock()
	if l.uploads[b.lc] == b.up {
		delete(l.uploads, b.lc)
	}
	l.mu.Unlock()
}
