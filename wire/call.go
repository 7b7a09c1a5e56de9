package wire

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/scion-go/scion/api"
)

// IDs. Each side numbers its own requests from its own counter, and a
// frame's kind says whose counter its ID comes from: request and cancel
// frames name the sender's requests (looked up in incoming), response, item
// and end frames name the receiver's (looked up in pending), credit frames
// name the receiver's incoming streams. So both sides may use ID 7 at the
// same time without confusion, and no coordination is needed.

// call is one request we sent and are waiting on.
type call struct {
	// ch receives the response (a unary call, capacity 1) or the items and
	// end (a stream, capacity window+1).
	ch     chan *Frame
	stream bool
	// A stream is failed through dead/err rather than ch, which may be
	// full of items.
	once sync.Once
	dead chan struct{}
	err  error
}

// fail ends the call with e unless it already ended. The read loop and
// shutdown call it, so it never blocks.
func (p *call) fail(e error) {
	if !p.stream {
		select {
		case p.ch <- &Frame{Kind: KindResponse, Error: api.AsError(e)}:
		default: // a response is already there; let it win
		}
		return
	}
	p.once.Do(func() {
		p.err = e
		close(p.dead)
	})
}

// register assigns an ID to p and records it, unless the Conn has ended.
func (c *Conn) register(p *call) (uint64, error) {
	id := c.nextID.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != nil {
		return 0, unavailable(c.reason)
	}
	if c.pending == nil {
		c.pending = make(map[uint64]*call)
	}
	c.pending[id] = p
	return id, nil
}

func (c *Conn) unregister(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Conn) lookup(id uint64) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[id]
}

// deliver hands a response, item or end to its caller. Frames for calls
// that already ended (timed out, cancelled) are dropped. A stream whose
// buffer is full has a peer that ignored its credit: that stream fails, the
// connection and other streams carry on.
func (c *Conn) deliver(f *Frame) {
	p := c.lookup(f.ID)
	if p == nil {
		return
	}
	select {
	case p.ch <- f:
		return
	default:
	}
	if p.stream {
		c.unregister(f.ID)
		p.fail(api.Errorf(502, api.CodeInternal, "stream %d: peer sent past its credit", f.ID))
		c.sendAsync(&Frame{Kind: KindCancel, ID: f.ID})
	}
}

// failPending fails one of our calls, e.g. when its response was too big.
func (c *Conn) failPending(id uint64, e error) {
	p := c.lookup(id)
	if p == nil {
		return
	}
	c.unregister(id)
	p.fail(e)
	if p.stream {
		c.sendAsync(&Frame{Kind: KindCancel, ID: id})
	}
}

func encodeBody(method string, v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, api.BadRequest("%s: encode request: %v", method, err)
	}
	return b, nil
}

// Call sends a request and waits for its response, decoding it into resp
// (which may be nil). The deadline of ctx (or DefaultTimeout) travels with
// the request. Errors from the peer come back as *api.Error; a dead or
// closed connection gives an *api.Error with code runtime_broker_unavailable,
// an expired deadline one with code runtime_broker_timeout. When ctx is
// cancelled (not expired) the handler is cancelled and Call returns
// ctx.Err().
func (c *Conn) Call(ctx context.Context, method string, req, resp any, opts ...CallOption) error {
	var o callOpts
	for _, opt := range opts {
		opt(&o)
	}
	body, err := encodeBody(method, req)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.DefaultTimeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()

	p := &call{ch: make(chan *Frame, 1)}
	id, err := c.register(p)
	if err != nil {
		return err
	}
	defer c.unregister(id)
	f := &Frame{Kind: KindRequest, ID: id, Method: method, Deadline: dl.UnixMilli(), Key: o.key, Body: body}
	if err := c.send(ctx, f); err != nil {
		if ctx.Err() != nil {
			return ctxError(ctx, method)
		}
		return err
	}
	select {
	case r := <-p.ch:
		if r.Error != nil {
			return fromPeer(r.Error)
		}
		if resp != nil && len(r.Body) > 0 {
			if err := json.Unmarshal(r.Body, resp); err != nil {
				return api.Internal("%s: decode response: %v", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		// Tell the handler; don't make the caller wait for the write lock.
		c.sendAsync(&Frame{Kind: KindCancel, ID: id})
		return ctxError(ctx, method)
	}
}
