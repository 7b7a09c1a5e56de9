package wire

// STUB: the wire helper replaces this file with the real implementation.
// The exported API below is the contract; keep it.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coder/websocket"
)

// Options tune a Conn. Zero values mean the defaults.
type Options struct {
	// HeartbeatInterval is how often a ping is sent (default 5s).
	HeartbeatInterval time.Duration
	// Grace is how long past a missed heartbeat the peer may stay silent
	// before the Conn closes itself as dead (default 10s).
	Grace time.Duration
	// DefaultTimeout bounds a Call whose ctx has no deadline (default 30s).
	DefaultTimeout time.Duration
	// MaxMessage bounds one reassembled message (default 64 MiB).
	MaxMessage int64
	// ChunkSize is the largest frame written; bigger bodies are split
	// (default 256 KiB).
	ChunkSize int
	// MaxConcurrent bounds concurrently running handlers (default 256).
	MaxConcurrent int
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
type Conn struct{}

// NewConn wraps an open WebSocket. Register handlers, then call Run.
func NewConn(ws *websocket.Conn, opts Options) *Conn { panic("stub") }

// Handle registers a request handler for method.
func (c *Conn) Handle(method string, h Handler) { panic("stub") }

// HandleStream registers a stream handler for method.
func (c *Conn) HandleStream(method string, h StreamHandler) { panic("stub") }

// Run reads frames until the connection ends (peer close, heartbeat
// timeout, ctx done or Close); it returns the reason.
func (c *Conn) Run(ctx context.Context) error { panic("stub") }

// Call sends a request and waits for its response, decoding it into resp
// (which may be nil). The deadline of ctx (or DefaultTimeout) travels with
// the request. Errors from the peer come back as *api.Error; a dead or
// closed connection gives an *api.Error with code runtime_broker_unavailable,
// an expired deadline one with code runtime_broker_timeout.
func (c *Conn) Call(ctx context.Context, method string, req, resp any, opts ...CallOption) error {
	panic("stub")
}

// Stream opens a streaming request.
func (c *Conn) Stream(ctx context.Context, method string, req any, opts ...CallOption) (*Stream, error) {
	panic("stub")
}

// Close ends the connection with a reason.
func (c *Conn) Close(reason string) error { panic("stub") }

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { panic("stub") }

// LastSeen is when the last frame or pong arrived from the peer.
func (c *Conn) LastSeen() time.Time { panic("stub") }

// Stream is the receiving side of a streaming call.
type Stream struct{}

// Recv decodes the next item into v; io.EOF after the last one; the
// handler's error (as *api.Error) if it failed.
func (s *Stream) Recv(v any) error { panic("stub") }

// Close cancels the stream (the handler's ctx ends).
func (s *Stream) Close() error { panic("stub") }
