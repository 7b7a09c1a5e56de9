package transport

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ServeLimits bound what one client can hold of the Hub's HTTP server. A
// zero value is no limit; config.DefaultServeLimits are the defaults of
// scion server start (see docs/security.md, "Timeouts, connection caps and rate limits").
type ServeLimits struct {
	// ReadHeaderTimeout bounds the request line and headers (slow headers).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds a whole request, body included (slow bodies).
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer. It is longer than any handler that is not a stream
	// (a dispatch to a broker, 30 s, plus an idempotent retry waiting on
	// the first request). Streams (logs -f, exec, attach, the control
	// channel) lift it: see streamingWriter.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// MaxConnsPerAddr caps the connections open from one client address
	// (an IPv4 address, an IPv6 /64). Behind a proxy every client has the
	// proxy's address: raise it, or set it to 0 (no cap) there.
	MaxConnsPerAddr int
	// MaxConns caps all open connections; keep it below the file
	// descriptor limit (MaxConnsForFDLimit).
	MaxConns int
	// MaxConnsPerCaller caps the requests one authenticated caller (a
	// user with its access tokens, an agent, a broker) has in progress at
	// once, streams included; the next is answered 429.
	MaxConnsPerCaller int
	// BodyStall is the longest a request body may go without a byte
	// arriving, and the grace before BodyMinRate applies; then the
	// connection is closed.
	BodyStall time.Duration
	// BodyMinRate (bytes/s) is the slowest a request body may arrive on
	// average, once BodyStall has passed.
	BodyMinRate int64
}

// FDReserve is what the Hub keeps of its descriptor limit for everything
// but client connections: the database files and pool, the listener,
// stdio, the OIDC provider, the runtime. The Hub's open descriptors stay
// under MaxConns + FDReserve.
const FDReserve = 128

// MaxConnsForFDLimit lowers want so that want connections and FDReserve
// fit under the descriptor limit nofile (0: unknown, want stands). It is
// at least 1: a Hub that accepts nothing is not a Hub.
func MaxConnsForFDLimit(want int, nofile uint64) int {
	if nofile == 0 {
		return want
	}
	room := int64(nofile) - FDReserve
	if room < 1 {
		return 1
	}
	if want <= 0 || int64(want) > room {
		return int(room)
	}
	return want
}

// NewHTTPServer is the http.Server a Hub serves h on, and ln wrapped in
// the connection caps; serve with srv.Serve(limited).
func NewHTTPServer(h http.Handler, ln net.Listener, l ServeLimits, log *slog.Logger) (*http.Server, *ConnLimiter) {
	cl := NewConnLimiter(ln, l.MaxConnsPerAddr, l.MaxConns, log)
	cl.callers.cap = l.MaxConnsPerCaller
	cl.body = bodyRules{Stall: l.BodyStall, MinRate: l.BodyMinRate}
	srv := &http.Server{
		Handler:           cl.trackBodies(h),
		ConnContext:       connContext,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         cl.ConnState,
	}
	if log != nil {
		// Timeouts and refusals are expected under load; net/http's own
		// lines ("TLS handshake error", "Accept error") go to debug.
		srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	}
	return srv, cl
}

// streamStall bounds one write of a stream: a client that takes longer
// to take a chunk is gone or hostile, and its stream ends.
const streamStall = 30 * time.Second

// streamingWriter is the ResponseWriter of the stream routes. The
// server's WriteTimeout would cut `scion logs -f` or a long exec after
// WriteTimeout; instead each write gets its own deadline of streamStall,
// so a stream lasts as long as its client reads it. (A WebSocket needs
// nothing: net/http clears a connection's deadlines when it is hijacked.)
type streamingWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func NewStreamingWriter(w http.ResponseWriter) *streamingWriter {
	return &streamingWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
}

// extend sets the deadline of the next write. It is also called when the
// handler returns, for the end of the answer that net/http writes then.
func (s *streamingWriter) Extend() { _ = s.rc.SetWriteDeadline(time.Now().Add(streamStall)) }

func (s *streamingWriter) WriteHeader(code int) {
	s.Extend()
	s.ResponseWriter.WriteHeader(code)
}

func (s *streamingWriter) Write(b []byte) (int, error) {
	s.Extend()
	return s.ResponseWriter.Write(b)
}

func (s *streamingWriter) Flush() {
	s.Extend()
	_ = s.rc.Flush()
}

func (s *streamingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return s.rc.Hijack() }

func (s *streamingWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
