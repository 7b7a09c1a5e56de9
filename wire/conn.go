package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Defaults for the zero Options. A peer silent for Interval+Grace (8 s)
// is gone: a frozen broker is offline within 10 s, and a pause of a few
// seconds (a GC pause, a laptop lid, a loaded host) leaves at most the
// pause plus one interval of silence, well inside it.
const (
	DefaultHeartbeatInterval = 2 * time.Second
	DefaultGrace             = 6 * time.Second
	DefaultTimeout           = 30 * time.Second
	DefaultMaxMessage        = 64 << 20
	DefaultChunkSize         = 256 << 10
	DefaultMaxConcurrent     = 256
	DefaultMaxQueued         = 1024
	DefaultMaxStreams        = 1024
	DefaultStreamWindow      = 32

	minChunkSize = 4 << 10
	maxWindow    = 1024
)

// Options tune a Conn. Zero values mean the defaults.
type Options struct {
	// HeartbeatInterval is how often a ping is sent (default 5s).
	HeartbeatInterval time.Duration
	// Grace is how long past a missed heartbeat the peer may stay silent
	// before the Conn closes itself as dead (default 10s).
	Grace time.Duration
	// OnRTT, when set, is told each heartbeat's round trip (ping to
	// pong): the channel's latency, for the Hub's metrics.
	OnRTT func(time.Duration)
	// DefaultTimeout bounds a Call whose ctx has no deadline (default 30s).
	DefaultTimeout time.Duration
	// MaxMessage bounds one reassembled message (default 64 MiB).
	MaxMessage int64
	// ChunkSize is the largest frame written; bigger bodies are split
	// (default 256 KiB). It is also the read limit, so both peers must use
	// the same value (or the reader a larger one).
	ChunkSize int
	// MaxConcurrent bounds concurrently running handlers (default 256).
	// Requests beyond it wait for a slot, still cancellable and still
	// subject to their deadline, in a queue of MaxQueued.
	MaxConcurrent int
	// MaxQueued bounds requests waiting for a handler slot (default 1024);
	// beyond it a request is refused at once with code rate_limited.
	MaxQueued int
	// MaxStreams bounds concurrently running stream handlers (default
	// 1024). Streams are long-lived (logs follow), so they do not take
	// handler slots and are refused with rate_limited, not queued, beyond.
	MaxStreams int
	// StreamWindow is how many items this side buffers per stream it
	// opened, the credit the handler starts with (default 32).
	StreamWindow int
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	def(&o.ChunkSize, DefaultChunkSize)
	o.ChunkSize = max(o.ChunkSize, minChunkSize)
	def(&o.MaxConcurrent, DefaultMaxConcurrent)
	def(&o.MaxQueued, DefaultMaxQueued)
	def(&o.MaxStreams, DefaultMaxStreams)
	def(&o.StreamWindow, DefaultStreamWindow)
	o.StreamWindow = min(o.StreamWindow, maxWindow)
	return o
}

// Request is an incoming request as a handler sees it.
type Request struct {
	ID     uint64
	Method string
	// Key is the idempotency key the caller attached, if any.
	Key  string
	Body json.RawMessage
}

// Decode unmarshals the request body into v.
func (r *Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// Handler answers one request. Returning an *api.Error sends it to the
// caller as is; any other error is sent as code "internal".
type Handler func(ctx context.Context, req *Request) (any, error)

// StreamHandler answers one request with a stream of items. send blocks
// under back-pressure and fails once the caller cancelled.
type StreamHandler func(ctx context.Context, req *Request, send func(item any) error) error

// CallOption adjusts one call.
type CallOption func(*callOpts)

type callOpts struct{ key string }

// WithKey attaches an idempotency key to a call.
func WithKey(key string) CallOption { return func(o *callOpts) { o.key = key } }

// Conn is one side of a control channel.
//
// An idle Conn costs one goroutine, its reader (and, with Run rather than
// Start, the goroutine waiting in Run), and nothing per timer: heartbeats
// are timers, and maps and buffers are allocated on first use.
type Conn struct {
	ws   *websocket.Conn
	opts Options

	// hctx is the parent of every handler's ctx; shutdown cancels it.
	hctx    context.Context
	hcancel context.CancelCauseFunc
	done    chan struct{}

	out        outbox
	chunkSlots chan struct{} // chunked messages being written at once
	slots      chan struct{} // running handlers (MaxConcurrent)
	work       chan *serving // unbuffered: idle workers receive requests here
	turn       chan struct{} // unbuffered: idle workers receive the read turn here
	onEnd      func()        // called once reading has ended, by the last reader (Start)
	queued     atomic.Int32
	streams    atomic.Int32

	nextID   atomic.Uint64 // our request IDs
	chunkSeq atomic.Uint64 // our chunked message IDs
	lastSeen atomic.Int64  // unix nanoseconds
	running  atomic.Bool

	// The read loop's, whichever goroutine holds the read turn (passing
	// the turn orders its accesses): reassembly, and the request of the
	// current message that the reader will serve itself.
	asm  assembler
	held *serving

	// reg holds the handlers; it is replaced, never changed, so that
	// requests find their handler without a lock.
	reg atomic.Pointer[registry]

	mu       sync.Mutex
	pending  map[uint64]*call    // requests we sent, by our ID
	incoming map[uint64]*serving // requests the peer sent, by its ID
	reason   error               // why the Conn ended; nil while it runs
	pingT    *time.Timer
	deadT    *time.Timer
	sweepT   *time.Timer // fails calls past their DefaultTimeout (call.go)
	sweepAt  int64       // when sweepT fires (mono); 0 if it is not armed
}

// registry is a Conn's handlers, by method name. A registry is never
// changed once published (Handle publishes a copy), so requests find their
// handler without a lock, and the read loop interns the method names it
// knows (a request for one costs no string allocation).
type registry map[string]*entry

type entry struct {
	name   string
	unary  Handler
	stream StreamHandler
}

// with returns a copy of r with name's handlers updated by set.
func (r registry) with(name string, set func(*entry)) registry {
	n := make(registry, len(r)+1)
	for k, v := range r {
		n[k] = v
	}
	m := &entry{name: name}
	if old := r[name]; old != nil {
		*m = *old
	}
	set(m)
	n[name] = m
	return n
}

func (c *Conn) handler(name string) Handler {
	if r := c.reg.Load(); r != nil {
		if m := (*r)[name]; m != nil {
			return m.unary
		}
	}
	return nil
}

func (c *Conn) streamHandler(name string) StreamHandler {
	if r := c.reg.Load(); r != nil {
		if m := (*r)[name]; m != nil {
			return m.stream
		}
	}
	return nil
}

// methods returns the registry, for the read loop to intern names with.
func (c *Conn) methods() registry {
	if r := c.reg.Load(); r != nil {
		return *r
	}
	return nil
}

// NewConn wraps an open WebSocket. Register handlers, then call Run.
func NewConn(ws *websocket.Conn, opts Options) *Conn {
	opts = opts.withDefaults()
	// Every message is at most ChunkSize (see chunk.go); the slack covers
	// a peer whose frame encoding differs slightly.
	ws.SetReadLimit(int64(opts.ChunkSize) + 1024)
	c := &Conn{
		ws:         ws,
		opts:       opts,
		done:       make(chan struct{}),
		chunkSlots: make(chan struct{}, maxChunkedOut),
		slots:      make(chan struct{}, opts.MaxConcurrent),
		work:       make(chan *serving),
		turn:       make(chan struct{}),
		asm:        assembler{max: opts.MaxMessage},
	}
	c.hctx, c.hcancel = context.WithCancelCause(context.Background())
	c.touch()
	return c
}

// Handle registers a request handler for method.
func (c *Conn) Handle(method string, h Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.methods().with(method, func(m *entry) { m.unary = h })
	c.reg.Store(&r)
}

// HandleStream registers a stream handler for method.
func (c *Conn) HandleStream(method string, h StreamHandler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.methods().with(method, func(m *entry) { m.stream = h })
	c.reg.Store(&r)
}

// Run reads frames until the connection ends (peer close, heartbeat
// timeout, ctx done or Close); it returns the reason. Run (or Start) may
// be called once; calls made before it are answered once it runs.
func (c *Conn) Run(ctx context.Context) error {
	done := make(chan struct{})
	if err := c.Start(ctx, func(error) { close(done) }); err != nil {
		return err
	}
	<-done
	return c.Err()
}

// Start is Run without the wait: it starts the Conn's reader and returns.
// Once reading has ended, ended is called with the reason, on the Conn's
// last goroutine. A server keeping many idle connections saves a goroutine
// per connection this way: the goroutine that reads also serves the
// requests it reads (see passTurn), so Run's caller can only wait.
func (c *Conn) Start(ctx context.Context, ended func(reason error)) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("wire: Run called twice")
	}
	stop := context.AfterFunc(ctx, func() {
		c.closeWith(fmt.Errorf("%w: %w", ErrClosed, context.Cause(ctx)), "context done")
	})
	c.onEnd = func() {
		stop()
		ended(c.Err())
	}
	c.startHeartbeat()
	go c.loop(true, nil)
	return nil
}

// Close ends the connection with a reason. Pending calls fail at once with
// code runtime_broker_unavailable; then the WebSocket close handshake sends
// the reason to the peer, which waits for the peer at most a few seconds.
func (c *Conn) Close(reason string) error {
	c.closeWith(fmt.Errorf("%w: %s", ErrClosed, reason), reason)
	return nil
}

func (c *Conn) closeWith(err error, reason string) {
	if !c.shutdown(err) {
		return
	}
	if len(reason) > 120 { // a close frame's reason is at most 123 bytes
		reason = strings.ToValidUTF8(reason[:120], "")
	}
	_ = c.ws.Close(websocket.StatusNormalClosure, reason)
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it runs.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// LastSeen is when the last frame or pong arrived from the peer.
func (c *Conn) LastSeen() time.Time { return time.Unix(0, c.lastSeen.Load()) }

func (c *Conn) touch() { c.lastSeen.Store(time.Now().UnixNano()) }

// shutdown ends the Conn's state: it records why, fails every pending call,
// cancels every handler and closes Done. It does not touch the WebSocket.
// It reports whether this call did it (only the first one does).
func (c *Conn) shutdown(reason error) bool {
	if reason == nil {
		reason = ErrClosed
	}
	c.mu.Lock()
	if c.reason != nil {
		c.mu.Unlock()
		return false
	}
	c.reason = reason
	if c.pingT != nil {
		c.pingT.Stop()
		c.deadT.Stop()
	}
	if c.sweepT != nil {
		c.sweepT.Stop()
	}
	pending := c.pending // claimed, all of them (see call)
	c.pending = nil
	c.mu.Unlock()

	close(c.done)
	c.hcancel(reason)
	e := unavailable(reason)
	for id, p := range pending {
		if p.stream {
			p.fail(e)
		} else {
			deliverTo(p, &Frame{Kind: KindResponse, ID: id, Error: e})
		}
	}
	return true
}

// readLoop reads and dispatches frames until the WebSocket fails, and
// returns the error; or until a message brought a request, which it
// returns for its goroutine to serve, having passed the read turn on. It
// never writes and never blocks on anything but the socket: other requests
// of the message go to workers, deliveries to callers are non-blocking.
func (c *Conn) readLoop() (*serving, error) {
	for {
		_, r, err := c.ws.Reader(context.Background())
		if err != nil {
			return nil, fmt.Errorf("wire: read: %w", err)
		}
		bp := getBuf()
		b, err := readAll(r, (*bp)[:0])
		c.touch()
		if err != nil {
			putBuf(bp, b)
			return nil, fmt.Errorf("wire: read: %w", err)
		}
		f := frames.Get().(*Frame)
		err = decodeFramesInto(b, f, c.methods(), c.dispatch)
		*f = Frame{}
		frames.Put(f)
		putBuf(bp, b)
		s := c.held
		c.held = nil
		if err != nil {
			if s != nil {
				c.run(s) // it ends at once: shutdown cancels it below
			}
			// The peer broke the protocol: say so in the close frame.
			if c.shutdown(err) {
				_ = c.ws.Close(websocket.StatusProtocolError, "protocol error")
			}
			return nil, err
		}
		if s != nil {
			c.passTurn()
			return s, nil
		}
	}
}

// frames holds the Frames the read loops decode into: dispatch copies what
// it keeps, so one per message being read suffices.
var frames = sync.Pool{New: func() any { return new(Frame) }}

func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func (c *Conn) dispatch(f *Frame) error {
	switch f.Kind {
	case KindRequest:
		c.accept(f)
	case KindResponse, KindItem, KindEnd:
		c.deliver(f)
	case KindCancel:
		c.cancelIncoming(f.ID)
	case KindCredit:
		c.addCredit(f.ID, f.Credit)
	case KindChunk:
		p, err := c.asm.add(f)
		if err != nil || p == nil {
			return err
		}
		if p.refused {
			c.refuse(p)
			return nil
		}
		inner, err := decodeChunked(p.buf, p.of, p.ofID)
		if err != nil {
			return err
		}
		return c.dispatch(inner)
	}
	// Unknown kinds are ignored so that a newer peer may add some.
	return nil
}

// refuse fails the one message that was too big to reassemble.
func (c *Conn) refuse(p *partial) {
	e := tooLarge("message", p.total, c.opts.MaxMessage)
	switch p.of {
	case KindRequest:
		go c.reply(&Frame{Kind: KindResponse, ID: p.ofID, Error: e})
	case KindResponse, KindItem, KindEnd:
		c.failPending(p.ofID, e)
	}
}
