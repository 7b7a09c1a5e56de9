package wire

import (
	"context"
	"errors"
	"sync"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/api"
)

// Writes. A frame is encoded by the goroutine sending it and then handed
// to the outbox (outbox.go), which serializes writes, batches frames that
// queue up meanwhile into one message, and lets small frames overtake the
// chunks of a big message.
//
// WebSocket writes are never given a caller's ctx: coder/websocket closes
// the connection when a write's ctx ends. A write blocked on a peer that
// stopped reading is released when the heartbeat closes the socket.

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

// putBuf returns b (the possibly grown *bp) to the pool, unless it grew
// big: pooling one reassembled 10 MiB buffer per connection would keep
// that memory forever.
func putBuf(bp *[]byte, b []byte) {
	if cap(b) > 64<<10 {
		return
	}
	*bp = b[:0]
	bufPool.Put(bp)
}

func (c *Conn) unavailable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason == nil { // only during shutdown's own window
		return unavailable(ErrClosed)
	}
	return unavailable(c.reason)
}

// send queues f for writing, in chunks if its encoding exceeds ChunkSize.
// It returns once the frame is written or queued; a write that fails later
// ends the connection, which fails every pending call. ctx bounds only the
// wait for queue room before the first byte: once the first chunk of a
// message is queued the rest follows (the peer would otherwise hold a
// partial message until the connection ends). Errors are *api.Error
// (request_too_large, runtime_broker_unavailable) or ctx.Err().
func (c *Conn) send(ctx context.Context, f *Frame) error {
	bp := getBuf()
	b, err := appendFrame((*bp)[:0], f)
	*bp = b
	if err != nil {
		putBuf(bp, b)
		return err
	}
	return c.sendEncoded(ctx, f, bp)
}

// sendEncoded is send for a frame already encoded in *bp (which it takes
// over); f gives its kind and ID.
func (c *Conn) sendEncoded(ctx context.Context, f *Frame, bp *[]byte) error {
	b := *bp
	if int64(len(b)) > c.opts.MaxMessage {
		putBuf(bp, b)
		return tooLarge("message", int64(len(b)), c.opts.MaxMessage)
	}
	if len(b) <= c.opts.ChunkSize {
		return c.enqueue(ctx, bp, false)
	}
	defer putBuf(bp, b)
	return c.sendChunked(ctx, f, b)
}

func (c *Conn) sendChunked(ctx context.Context, f *Frame, b []byte) error {
	// Bound the chunked messages in flight so the peer's assembler limit
	// (maxAssembling) is never reached by a well-behaved sender.
	select {
	case c.chunkSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.unavailable()
	}
	defer func() { <-c.chunkSlots }()

	cf := Frame{Kind: KindChunk, ID: c.chunkSeq.Add(1), Of: f.Kind, OfID: f.ID, Total: int64(len(b))}
	per := chunkPayload(c.opts.ChunkSize)
	for off := 0; off < len(b); off += per {
		end := min(off+per, len(b))
		cf.Off, cf.More, cf.Data = int64(off), end < len(b), b[off:end]
		cp := getBuf()
		cb, err := appendFrame((*cp)[:0], &cf)
		*cp = cb
		if err != nil {
			putBuf(cp, cb)
			return err
		}
		qctx := ctx
		if off > 0 {
			qctx = context.Background() // committed: see send
		}
		if err := c.enqueue(qctx, cp, true); err != nil {
			return err
		}
	}
	return nil
}

// writeMsg writes one WebSocket message; only the outbox's writer calls
// it. A failed write leaves the WebSocket closed (coder/websocket closes it
// on any error), so the Conn ends with it.
func (c *Conn) writeMsg(b []byte) error {
	if err := c.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		if c.shutdown(err) {
			_ = c.ws.CloseNow()
		}
		return c.unavailable()
	}
	return nil
}

// reply sends a frame answering the peer, on behalf of a handler goroutine.
// A response too big for MaxMessage is replaced by an error saying so.
func (c *Conn) reply(f *Frame) {
	err := c.send(context.Background(), f)
	if e := tooLargeError(err); e != nil && f.Error == nil {
		_ = c.send(context.Background(), &Frame{Kind: f.Kind, ID: f.ID, Error: e})
	}
}

// tooLargeError returns err if it is a request_too_large error.
func tooLargeError(err error) *api.Error {
	if err == nil {
		return nil
	}
	var e *api.Error
	if errors.As(err, &e) && e.Code == api.CodeRequestTooLarge {
		return e
	}
	return nil
}

// replyJSON sends the response to request id with the JSON encoding of out
// as its body, encoded straight into the frame.
func (c *Conn) replyJSON(method string, id uint64, out any) {
	f := Frame{Kind: KindResponse, ID: id}
	bp := getBuf()
	b, err := appendFrameJSON((*bp)[:0], &f, out)
	*bp = b
	if err != nil {
		putBuf(bp, b)
		c.reply(errFrame(KindResponse, id, api.Internal("%s: encode response: %v", method, err)))
		return
	}
	if e := tooLargeError(c.sendEncoded(context.Background(), &f, bp)); e != nil {
		_ = c.send(context.Background(), errFrame(KindResponse, id, e))
	}
}

// sendAsync sends a small control frame (cancel, credit) without making the
// caller wait for queue room.
func (c *Conn) sendAsync(f *Frame) {
	go func() { _ = c.send(context.Background(), f) }()
}
