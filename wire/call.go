package wire

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
)

// IDs. Each side numbers its own requests from its own counter, and a
// frame's kind says whose counter its ID comes from: request and cancel
// frames name the sender's requests (looked up in incoming), response, item
// and end frames name the receiver's (looked up in pending), credit frames
// name the receiver's incoming streams. So both sides may use ID 7 at the
// same time without confusion, and no coordination is needed.

// call is one request we sent and are waiting on.
//
// A unary call's outcome is delivered exactly once: whoever delivers it
// (the read loop, the sweeper, shutdown) first claims it by removing it
// from pending under c.mu, then sends on ch outside the lock (a send that
// readies the caller can cost a thread wakeup, which must not hold up
// everyone else's use of c.mu). A caller that gives up unregisters its
// call under c.mu; if it finds the call already claimed, it waits for the
// delivery under way. Either way nothing touches the call afterwards, so
// it can be reused.
type call struct {
	// ch receives the response (a unary call, capacity 1) or the items and
	// end (a stream, capacity window+1).
	ch     chan *Frame
	stream bool

	// Unary calls. resp holds the delivered response, which ch points to.
	resp Frame
	// expires is when the DefaultTimeout of a call whose ctx had no
	// deadline runs out (see sweep), on the mono clock; 0 for the others.
	expires int64
	// bound is such a call's ctx while it sends.
	bound sendBound

	// A stream is failed through dead/err rather than ch, which may be
	// full of items.
	once sync.Once
	dead chan struct{}
	err  error
}

var calls = sync.Pool{New: func() any { return &call{ch: make(chan *Frame, 1)} }}

// putCall recycles a unary call nothing can deliver to any more (see
// giveUp), its delivery, if any, received.
func putCall(p *call) {
	p.resp, p.expires = Frame{}, 0
	calls.Put(p)
}

// timedOut is what sweep delivers to a call whose DefaultTimeout ran out.
var timedOut = &Frame{Kind: KindResponse}

// deliverTo hands a claimed unary call its outcome. f may belong to the
// read loop: what is kept is a copy.
func deliverTo(p *call, f *Frame) {
	if f != timedOut {
		p.resp = *f
		f = &p.resp
	}
	p.ch <- f // never blocks: capacity 1, one delivery
}

// giveUp unregisters a unary call its caller no longer waits for. When it
// was claimed already, it waits for the delivery, which is under way, so
// that the call can be reused.
func (c *Conn) giveUp(id uint64, p *call) {
	c.mu.Lock()
	_, pending := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !pending {
		<-p.ch
	}
}

// fail ends a stream call with e unless it already ended. It never blocks.
func (p *call) fail(e error) {
	p.once.Do(func() {
		p.err = e
		close(p.dead)
	})
}

// mono is a monotonic clock in nanoseconds, for deadlines kept as numbers.
func mono() int64 { return int64(time.Since(monoStart)) }

var monoStart = time.Now()

// register records p as request id, unless the Conn has ended.
func (c *Conn) register(id uint64, p *call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != nil {
		return unavailable(c.reason)
	}
	if c.pending == nil {
		c.pending = make(map[uint64]*call)
	}
	c.pending[id] = p
	if p.expires != 0 {
		c.armSweepLocked(p.expires)
	}
	return nil
}

func (c *Conn) unregister(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Default timeouts. A call whose ctx has no deadline gets DefaultTimeout;
// instead of a timer per call (a context.WithTimeout), one timer per Conn,
// the sweeper, is armed for the earliest such expiry and fails the calls
// whose time is up. Calls come and go by the thousand in a second and each
// expires later than the one before, so the timer is rearmed only about
// once per DefaultTimeout. (Arming a timer may wake an idle thread, which
// costs as much as the rest of a round trip on some machines.)

// armSweepLocked makes sure the sweeper runs by at (mono). c.mu is held.
func (c *Conn) armSweepLocked(at int64) {
	if c.sweepAt != 0 && c.sweepAt <= at {
		return
	}
	c.sweepAt = at
	d := time.Duration(at - mono())
	if c.sweepT == nil {
		c.sweepT = time.AfterFunc(d, c.sweep)
	} else {
		c.sweepT.Reset(d)
	}
}

// sweep fails the calls whose DefaultTimeout ran out and rearms for the
// next expiry, if any.
func (c *Conn) sweep() {
	now := mono()
	c.mu.Lock()
	c.sweepAt = 0
	if c.reason != nil {
		c.mu.Unlock()
		return
	}
	next := int64(0)
	var expired []*call
	for id, p := range c.pending {
		switch {
		case p.expires == 0:
		case p.expires <= now:
			delete(c.pending, id)
			expired = append(expired, p)
		case next == 0 || p.expires < next:
			next = p.expires
		}
	}
	if next != 0 {
		c.armSweepLocked(next)
	}
	c.mu.Unlock()
	for _, p := range expired {
		deliverTo(p, timedOut)
	}
}

// deliver hands a response, item or end to its caller. Frames for calls
// that already ended (timed out, cancelled) are dropped. A stream whose
// buffer is full has a peer that ignored its credit: that stream fails, the
// connection and other streams carry on. f belongs to the read loop: what
// is kept is a copy.
func (c *Conn) deliver(f *Frame) {
	c.mu.Lock()
	p := c.pending[f.ID]
	if p == nil {
		c.mu.Unlock()
		return
	}
	if !p.stream {
		delete(c.pending, f.ID)
		c.mu.Unlock()
		deliverTo(p, f)
		return
	}
	c.mu.Unlock()
	item := new(Frame)
	*item = *f
	select {
	case p.ch <- item:
		return
	default:
	}
	c.unregister(f.ID)
	p.fail(api.Errorf(api.CodeInternal, "stream %d: peer sent past its credit", f.ID))
	c.sendAsync(&Frame{Kind: KindCancel, ID: f.ID})
}

// failPending fails one of our calls, e.g. when its response was too big.
func (c *Conn) failPending(id uint64, e error) {
	c.mu.Lock()
	p := c.pending[id]
	if p == nil {
		c.mu.Unlock()
		return
	}
	delete(c.pending, id)
	c.mu.Unlock()
	if !p.stream {
		deliverTo(p, &Frame{Kind: KindResponse, ID: id, Error: api.AsError(e)})
		return
	}
	p.fail(e)
	c.sendAsync(&Frame{Kind: KindCancel, ID: id})
}

func encodeBody(method string, v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, encodeError(method, err)
	}
	return b, nil
}

func encodeError(method string, err error) error {
	return api.BadRequest("%s: encode request: %v", method, err)
}

// keyOf applies opts. (A callOpts handed to the options escapes, so
// there is none without options.)
func keyOf(opts []CallOption) string {
	if len(opts) == 0 {
		return ""
	}
	var o callOpts
	for _, opt := range opts {
		opt(&o)
	}
	return o.key
}

// Call sends a request and waits for its response, decoding it into resp
// (which may be nil). The deadline of ctx (or DefaultTimeout) travels with
// the request. Errors from the peer come back as *api.Error; a dead or
// closed connection gives an *api.Error with code runtime_broker_unavailable,
// an expired deadline one with code runtime_broker_timeout. When ctx is
// cancelled (not expired) the handler is cancelled and Call returns
// ctx.Err().
func (c *Conn) Call(ctx context.Context, method string, req, resp any, opts ...CallOption) error {
	p := calls.Get().(*call)
	dl, ok := ctx.Deadline()
	if !ok {
		p.expires = mono() + int64(c.opts.DefaultTimeout)
		dl = time.Now().Add(c.opts.DefaultTimeout)
	}
	id := c.nextID.Add(1)
	f := Frame{Kind: KindRequest, ID: id, Method: method, Deadline: dl.UnixMilli(), Key: keyOf(opts)}
	bp := getBuf()
	b, err := appendFrameJSON((*bp)[:0], &f, req)
	*bp = b
	if err != nil {
		putBuf(bp, b)
		putCall(p)
		return encodeError(method, err)
	}
	if err := c.register(id, p); err != nil {
		putBuf(bp, b)
		putCall(p)
		return err
	}
	sctx := ctx
	if p.expires != 0 {
		p.bound = sendBound{Context: ctx, until: dl}
		sctx = &p.bound
	}
	err = c.sendEncoded(sctx, &f, bp)
	if err != nil && sctx.Err() != nil {
		err = ctxError(sctx, method)
	}
	p.bound.release()
	if err != nil {
		c.giveUp(id, p)
		putCall(p)
		return err
	}
	select {
	case r := <-p.ch:
		err := c.result(method, id, r, resp)
		putCall(p)
		return err
	case <-ctx.Done():
		c.giveUp(id, p)
		putCall(p)
		// Tell the handler; don't make the caller wait for the write lock.
		c.sendAsync(&Frame{Kind: KindCancel, ID: id})
		return ctxError(ctx, method)
	}
}

// sendBound is the ctx a call without a deadline sends under: the
// caller's, bounded by DefaultTimeout. Sending waits on ctx only when the
// outbox is full or for a chunked message, so the bounded context (and its
// timer) is made only then. It is used by the calling goroutine alone.
type sendBound struct {
	context.Context // the caller's
	until           time.Time
	bounded         context.Context // made by the first Done
	cancel          context.CancelFunc
}

func (b *sendBound) Deadline() (time.Time, bool) { return b.until, true }

func (b *sendBound) Done() <-chan struct{} {
	if b.bounded == nil {
		b.bounded, b.cancel = context.WithDeadline(b.Context, b.until)
	}
	return b.bounded.Done()
}

func (b *sendBound) Err() error {
	if b.bounded == nil {
		return b.Context.Err()
	}
	return b.bounded.Err()
}

func (b *sendBound) release() {
	if b.cancel != nil {
		b.cancel()
	}
	*b = sendBound{}
}

// result turns the outcome delivered to call id into Call's return value.
func (c *Conn) result(method string, id uint64, r *Frame, resp any) error {
	if r == timedOut {
		c.sendAsync(&Frame{Kind: KindCancel, ID: id})
		return timeoutError(method)
	}
	if r.Error != nil {
		return fromPeer(r.Error)
	}
	if resp != nil && len(r.Body) > 0 {
		if m, ok := resp.(*json.RawMessage); ok {
			// What Unmarshal would do, without validating again what the
			// frame decoder just validated.
			*m = append((*m)[:0], r.Body...)
			return nil
		}
		if err := json.Unmarshal(r.Body, resp); err != nil {
			return api.Internal("%s: decode response: %v", method, err)
		}
	}
	return nil
}
