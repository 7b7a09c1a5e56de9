package wire

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/scion-go/scion/api"
)

// Streams use credit-based flow control. The stream request carries the
// caller's window W (StreamWindow): the handler may send W items, and each
// send waits for credit once they are used up. The caller buffers at most W
// items (plus the end frame) in a channel the read loop fills without ever
// blocking, and grants credit back in batches of W/2 as Recv consumes
// items. A slow consumer thus holds at most W items in memory and slows
// only its own handler; the read loop, and so every other call and stream
// on the connection, keeps going. A peer that sends past its credit fails
// that stream only.

// Stream is the receiving side of a streaming call. Recv must be called
// from one goroutine at a time; Close may be called from any.
type Stream struct {
	c      *Conn
	id     uint64
	method string
	p      *call
	stop   func() bool // stops the ctx watcher

	used  int64 // items consumed since credit was last granted
	grant int64

	mu    sync.Mutex
	final error // io.EOF, the handler's error, ErrStreamClosed...
}

// Stream opens a streaming request. Its ctx bounds the whole stream: when
// it ends the handler is cancelled, and Recv returns a timeout error (for a
// deadline) or ctx.Err(). Unlike Call, a ctx without deadline gets none:
// streams such as logs follow last as long as the caller wants.
func (c *Conn) Stream(ctx context.Context, method string, req any, opts ...CallOption) (*Stream, error) {
	body, err := encodeBody(method, req)
	if err != nil {
		return nil, err
	}
	w := c.opts.StreamWindow
	p := &call{ch: make(chan *Frame, w+1), stream: true, dead: make(chan struct{})}
	id := c.nextID.Add(1)
	if err := c.register(id, p); err != nil {
		return nil, err
	}
	f := &Frame{Kind: KindRequest, ID: id, Method: method, Key: keyOf(opts), Stream: true, Credit: int64(w), Body: body}
	if dl, ok := ctx.Deadline(); ok {
		f.Deadline = dl.UnixMilli()
	}
	if err := c.send(ctx, f); err != nil {
		c.unregister(id)
		if ctx.Err() != nil {
			return nil, ctxError(ctx, method)
		}
		return nil, err
	}
	s := &Stream{c: c, id: id, method: method, p: p, grant: max(int64(w)/2, 1)}
	stop := context.AfterFunc(ctx, func() { s.abort(ctxError(ctx, method)) })
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	return s, nil
}

// Recv decodes the next item into v; io.EOF after the last one; the
// handler's error (as *api.Error) if it failed.
func (s *Stream) Recv(v any) error {
	if err := s.ended(); err != nil {
		return err
	}
	var f *Frame
	select { // buffered items first, even if the connection died meanwhile
	case f = <-s.p.ch:
	default:
		select {
		case f = <-s.p.ch:
		case <-s.p.dead:
			return s.finish(s.p.err, false)
		}
	}
	if f.Kind != KindItem { // end, or a response: an error before streaming
		if f.Error != nil {
			return s.finish(fromPeer(f.Error), false)
		}
		return s.finish(io.EOF, false)
	}
	if s.used++; s.used >= s.grant {
		s.c.sendAsync(&Frame{Kind: KindCredit, ID: s.id, Credit: s.used})
		s.used = 0
	}
	if v != nil {
		if err := json.Unmarshal(f.Body, v); err != nil {
			return api.Internal("%s: decode item: %v", s.method, err)
		}
	}
	return nil
}

// Close cancels the stream (the handler's ctx ends). Recv then returns
// ErrStreamClosed, unless the stream had already ended.
func (s *Stream) Close() error {
	s.finish(ErrStreamClosed, true)
	return nil
}

func (s *Stream) ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.final
}

// abort ends the stream because its ctx ended.
func (s *Stream) abort(err error) {
	s.p.fail(err)
	s.finish(err, true)
}

// finish records the stream's outcome once and releases it; cancel tells
// the handler to stop. Once a stream ended, Close and Recv change nothing.
func (s *Stream) finish(err error, cancel bool) error {
	s.mu.Lock()
	if s.final != nil {
		err = s.final
		s.mu.Unlock()
		return err
	}
	s.final = err
	stop := s.stop
	s.mu.Unlock()
	if stop != nil { // nil when the ctx watcher fired before it was stored
		stop()
	}
	s.c.unregister(s.id)
	if cancel {
		s.c.sendAsync(&Frame{Kind: KindCancel, ID: s.id})
	}
	return err
}
