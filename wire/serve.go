package wire

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scion-go/scion/api"
)

// serving is one request from the peer that a handler is answering (or
// waiting to answer). It is also the handler's ctx (see Done).
type serving struct {
	c      *Conn
	req    Request // the request, as the handler sees it
	stream bool
	// deadline is the caller's deadline; zero if it sent none.
	deadline time.Time
	// byPeer is set when the caller cancelled: nobody wants the answer.
	byPeer atomic.Bool

	mu sync.Mutex
	// The ctx: err is set once it ended. done, the timer for the deadline
	// and the watch on the Conn's end exist only once Done was called.
	err        error
	done       chan struct{}
	timer      *time.Timer
	stopParent func() bool
	afters     []afterFunc
	nextAfter  uint64

	// Stream flow control: items the handler may still send.
	credit int64
	wake   chan struct{} // capacity 1: "credit arrived"
}

type afterFunc struct {
	id uint64
	f  func()
}

// A request's ctx. Most handlers of a control channel answer in
// microseconds and never look at ctx.Done; a context.WithDeadline per
// request would arm (and disarm) a timer for each of them, and arming a
// timer may wake an idle thread. So serving is its own Context: Err checks
// the deadline on the clock, and the timer is armed only when a handler
// asks for Done (or derives a context, which asks for it). It ends at the
// deadline, when the caller cancels, when the handler returns and when the
// Conn ends (with the Conn's reason as its cause, as a child of hctx).

func (s *serving) Deadline() (time.Time, bool) { return s.deadline, !s.deadline.IsZero() }

func (s *serving) Value(key any) any { return s.c.hctx.Value(key) }

func (s *serving) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.doneLocked()
}

// doneLocked creates the done channel on first use and, unless the ctx
// already ended, arms what ends it.
func (s *serving) doneLocked() chan struct{} {
	if s.done != nil {
		return s.done
	}
	s.done = make(chan struct{})
	if s.err != nil {
		close(s.done)
	} else if err := s.expired(); err != nil {
		s.endLocked(err)
	} else {
		if !s.deadline.IsZero() {
			s.timer = time.AfterFunc(time.Until(s.deadline), func() { s.end(context.DeadlineExceeded) })
		}
		s.stopParent = context.AfterFunc(s.c.hctx, func() { s.end(context.Canceled) })
	}
	return s.done
}

func (s *serving) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		if err := s.expired(); err != nil {
			s.endLocked(err)
		}
	}
	return s.err
}

// expired says whether the ctx ended without being told: the deadline
// passed or the Conn ended.
func (s *serving) expired() error {
	if s.c.hctx.Err() != nil {
		return context.Canceled
	}
	if !s.deadline.IsZero() && !time.Now().Before(s.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// AfterFunc lets context.AfterFunc and contexts derived from this one
// follow it without a goroutine each (context's afterFuncer).
func (s *serving) AfterFunc(f func()) (stop func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doneLocked(); s.err != nil {
		go f()
		return func() bool { return false }
	}
	s.nextAfter++
	id := s.nextAfter
	s.afters = append(s.afters, afterFunc{id, f})
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, a := range s.afters {
			if a.id == id {
				s.afters = append(s.afters[:i], s.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// end ends the ctx with err unless it already ended.
func (s *serving) end(err error) {
	s.mu.Lock()
	s.endLocked(err)
	s.mu.Unlock()
}

func (s *serving) endLocked(err error) {
	if s.err != nil {
		return
	}
	s.err = err
	if s.done != nil {
		close(s.done)
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.stopParent != nil {
		s.stopParent()
		s.stopParent = nil
	}
	for _, a := range s.afters {
		go a.f()
	}
	s.afters = nil
}

// accept starts serving a request. It runs on the read loop, so it only
// registers the request (a cancel right behind it must find it) and keeps
// it for the reader to serve once the message is read (readLoop); an
// earlier request of the same message goes to a worker. f belongs to the
// read loop: what is kept is copied.
func (c *Conn) accept(f *Frame) {
	s := &serving{c: c, stream: f.Stream}
	if f.Deadline > 0 {
		s.deadline = time.UnixMilli(f.Deadline)
	}
	if f.Stream {
		s.credit = min(max(f.Credit, 1), maxWindow)
		s.wake = make(chan struct{}, 1)
	}
	s.req = Request{ID: f.ID, Method: f.Method, Key: f.Key, Body: f.Body}
	c.mu.Lock()
	_, dup := c.incoming[f.ID]
	if c.reason != nil || dup { // a duplicate ID is a peer bug: ignore it
		c.mu.Unlock()
		return
	}
	if c.incoming == nil {
		c.incoming = make(map[uint64]*serving)
	}
	c.incoming[f.ID] = s
	c.mu.Unlock()
	if c.held != nil {
		c.run(c.held)
	}
	c.held = s
}

// workerIdle is how long a worker goroutine waits for another request
// before it exits. Reusing a worker saves, under load, the goroutine start
// and, mostly, growing a fresh stack through JSON decoding on every
// request; an idle Conn still ends up with no worker at all.
const workerIdle = time.Second

// run hands s to an idle worker, or starts one. It never blocks.
func (c *Conn) run(s *serving) {
	select {
	case c.work <- s:
	default:
		go c.loop(false, s)
	}
}

// passTurn hands the read turn to an idle worker, or to a new one. The
// reader calls it when a message brought a request, which it then serves
// itself: the request starts at once, and the wake-up of the next reader
// happens while it runs, not before it can start.
func (c *Conn) passTurn() {
	select {
	case c.turn <- struct{}{}:
	default:
		go c.loop(true, nil)
	}
}

// loop is the life of each of a Conn's worker goroutines. The one that
// holds the read turn reads (readLoop) until a message brings a request,
// passes the turn on and serves the request; the others serve requests
// handed to them and wait for more or for the turn. A worker exits after
// workerIdle without either, so an idle Conn keeps only its reader. The
// idle timer is not reset per request (arming a timer may wake an idle
// thread): when it fires, the worker checks how long it has really been
// idle and waits for the rest, if any.
func (c *Conn) loop(reading bool, s *serving) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		if reading {
			var err error
			if s, err = c.readLoop(); err != nil {
				if c.shutdown(err) {
					_ = c.ws.CloseNow()
				}
				c.onEnd()
				return
			}
			reading = false
		}
		c.serve(s)
		s = nil // don't keep the request alive while idle
		last := time.Now()
	wait:
		select {
		case s = <-c.work:
		case <-c.turn:
			reading = true
		case <-idle.C:
			if d := time.Since(last); d < workerIdle {
				idle.Reset(workerIdle - d)
				goto wait
			}
			return
		case <-c.done:
			return
		}
	}
}

func (c *Conn) incomingByID(id uint64) *serving {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.incoming[id]
}

func (c *Conn) cancelIncoming(id uint64) {
	if s := c.incomingByID(id); s != nil {
		s.byPeer.Store(true)
		s.end(context.Canceled)
	}
}

func (c *Conn) addCredit(id uint64, n int64) {
	s := c.incomingByID(id)
	if s == nil || s.wake == nil || n <= 0 {
		return
	}
	s.mu.Lock()
	// Clamp: a peer granting absurd credit only hurts itself, but keep
	// the counter from overflowing.
	s.credit = min(s.credit+min(n, maxWindow), 2*maxWindow)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take waits for one unit of credit.
func (s *serving) take() error {
	for {
		s.mu.Lock()
		if s.credit > 0 {
			s.credit--
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.Done():
			return s.Err()
		}
	}
}

func (c *Conn) serve(s *serving) {
	defer func() {
		s.end(context.Canceled)
		c.mu.Lock()
		delete(c.incoming, s.req.ID)
		c.mu.Unlock()
	}()
	if s.stream {
		out := c.serveStream(s)
		if !s.byPeer.Load() && c.hctx.Err() == nil {
			c.reply(out)
		}
		return
	}
	out, e := c.serveCall(s)
	if s.byPeer.Load() || c.hctx.Err() != nil {
		return
	}
	if e != nil {
		c.reply(errFrame(KindResponse, s.req.ID, e))
		return
	}
	c.replyJSON(s.req.Method, s.req.ID, out)
}

func errFrame(kind Kind, id uint64, e *api.Error) *Frame {
	return &Frame{Kind: kind, ID: id, Error: e}
}

func unknownMethod(method string, stream bool) *api.Error {
	kind := "method"
	if stream {
		kind = "stream method"
	}
	return api.Errorf(api.CodeMethodNotAllowed, "unknown %s %q", kind, method)
}

// serveCall runs the handler; it returns its result or the error to send.
func (c *Conn) serveCall(s *serving) (any, *api.Error) {
	if e := c.acquire(s, s.req.Method); e != nil {
		return nil, e
	}
	defer func() { <-c.slots }()
	h := c.handler(s.req.Method)
	if h == nil {
		return nil, unknownMethod(s.req.Method, false)
	}
	out, err := runHandler(h, s)
	if err != nil {
		return nil, handlerError(s, s.req.Method, err)
	}
	return out, nil
}

// acquire takes a handler slot. When all are busy the request waits, as a
// parked goroutine that the read loop does not wait for, while its ctx
// lives; at most MaxQueued wait, later ones are refused.
func (c *Conn) acquire(ctx context.Context, method string) *api.Error {
	select {
	case c.slots <- struct{}{}:
		return nil
	default:
	}
	if int(c.queued.Add(1)) > c.opts.MaxQueued {
		c.queued.Add(-1)
		return api.Errorf(api.CodeRateLimited,
			"%s: %d requests running and %d waiting", method, c.opts.MaxConcurrent, c.opts.MaxQueued)
	}
	defer c.queued.Add(-1)
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return handlerError(ctx, method, ctx.Err())
	}
}

// runHandler turns a panic into an internal error: one bad request must not
// take the connection (and every other request on it) down.
func runHandler(h Handler, s *serving) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, api.Internal("handler panicked: %v", r)
		}
	}()
	return h(s, &s.req)
}

func runStreamHandler(h StreamHandler, s *serving, send func(any) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = api.Internal("handler panicked: %v", r)
		}
	}()
	return h(s, &s.req, send)
}

func (c *Conn) serveStream(s *serving) *Frame {
	id, method := s.req.ID, s.req.Method
	if int(c.streams.Add(1)) > c.opts.MaxStreams {
		c.streams.Add(-1)
		return errFrame(KindEnd, id, api.Errorf(api.CodeRateLimited,
			"%s: %d streams running", method, c.opts.MaxStreams))
	}
	defer c.streams.Add(-1)
	h := c.streamHandler(method)
	if h == nil {
		return errFrame(KindEnd, id, unknownMethod(method, true))
	}
	send := func(item any) error {
		f := Frame{Kind: KindItem, ID: id}
		bp := getBuf()
		b, err := appendFrameJSON((*bp)[:0], &f, item)
		*bp = b
		if err != nil {
			putBuf(bp, b)
			return fmt.Errorf("wire: %s: encode item: %w", method, err)
		}
		if err := s.take(); err != nil {
			putBuf(bp, b)
			return err
		}
		return c.sendEncoded(s, &f, bp)
	}
	if err := runStreamHandler(h, s, send); err != nil {
		return errFrame(KindEnd, id, handlerError(s, method, err))
	}
	return &Frame{Kind: KindEnd, ID: id}
}
