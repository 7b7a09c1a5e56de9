package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scion-go/scion/api"
)

// serving is one request from the peer that a handler is answering (or
// waiting to answer).
type serving struct {
	cancel context.CancelFunc
	// byPeer is set when the caller cancelled: nobody wants the answer.
	byPeer atomic.Bool

	// Stream flow control: items the handler may still send.
	mu     sync.Mutex
	credit int64
	wake   chan struct{} // capacity 1: "credit arrived"
}

// accept starts serving a request. It runs on the read loop, so it only
// registers the request (a cancel right behind it must find it) and hands
// it to a goroutine.
func (c *Conn) accept(f *Frame) {
	var ctx context.Context
	s := &serving{}
	if f.Deadline > 0 {
		ctx, s.cancel = context.WithDeadline(c.hctx, time.UnixMilli(f.Deadline))
	} else {
		ctx, s.cancel = context.WithCancel(c.hctx)
	}
	if f.Stream {
		s.credit = min(max(f.Credit, 1), maxWindow)
		s.wake = make(chan struct{}, 1)
	}
	c.mu.Lock()
	_, dup := c.incoming[f.ID]
	if c.reason != nil || dup { // a duplicate ID is a peer bug: ignore it
		c.mu.Unlock()
		s.cancel()
		return
	}
	if c.incoming == nil {
		c.incoming = make(map[uint64]*serving)
	}
	c.incoming[f.ID] = s
	c.mu.Unlock()
	c.run(job{ctx, s, f})
}

// job is a request for a worker goroutine.
type job struct {
	ctx context.Context
	s   *serving
	f   *Frame
}

// workerIdle is how long a worker goroutine waits for another request
// before it exits. Reusing a worker saves, under load, the goroutine start
// and, mostly, growing a fresh stack through JSON decoding on every
// request; an idle Conn still ends up with no worker at all.
const workerIdle = time.Second

// run hands j to an idle worker, or starts one. It never blocks.
func (c *Conn) run(j job) {
	select {
	case c.work <- j:
	default:
		go c.worker(j)
	}
}

func (c *Conn) worker(j job) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		c.serve(j.ctx, j.s, j.f)
		j = job{} // don't keep the request alive while idle
		t.Reset(workerIdle)
		select {
		case j = <-c.work:
		case <-t.C:
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
		s.cancel()
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
func (s *serving) take(ctx context.Context) error {
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
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Conn) serve(ctx context.Context, s *serving, f *Frame) {
	defer func() {
		s.cancel()
		c.mu.Lock()
		delete(c.incoming, f.ID)
		c.mu.Unlock()
	}()
	var out *Frame
	if f.Stream {
		out = c.serveStream(ctx, s, f)
	} else {
		out = c.serveCall(ctx, f)
	}
	if s.byPeer.Load() || c.hctx.Err() != nil {
		return
	}
	c.reply(out)
}

func errFrame(kind Kind, id uint64, e *api.Error) *Frame {
	return &Frame{Kind: kind, ID: id, Error: e}
}

func unknownMethod(f *Frame) *api.Error {
	kind := "method"
	if f.Stream {
		kind = "stream method"
	}
	return api.Errorf(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "unknown %s %q", kind, f.Method)
}

func (c *Conn) serveCall(ctx context.Context, f *Frame) *Frame {
	if e := c.acquire(ctx, f.Method); e != nil {
		return errFrame(KindResponse, f.ID, e)
	}
	defer func() { <-c.slots }()
	c.mu.Lock()
	h := c.handlers[f.Method]
	c.mu.Unlock()
	if h == nil {
		return errFrame(KindResponse, f.ID, unknownMethod(f))
	}
	out, err := runHandler(func() (any, error) {
		return h(ctx, &Request{ID: f.ID, Method: f.Method, Key: f.Key, Body: f.Body})
	})
	if err != nil {
		return errFrame(KindResponse, f.ID, handlerError(ctx, f.Method, err))
	}
	r := &Frame{Kind: KindResponse, ID: f.ID}
	if out != nil {
		b, err := json.Marshal(out)
		if err != nil {
			return errFrame(KindResponse, f.ID, api.Internal("%s: encode response: %v", f.Method, err))
		}
		r.Body = b
	}
	return r
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
		return api.Errorf(http.StatusTooManyRequests, api.CodeRateLimited,
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
func runHandler(h func() (any, error)) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, api.Internal("handler panicked: %v", r)
		}
	}()
	return h()
}

func (c *Conn) serveStream(ctx context.Context, s *serving, f *Frame) *Frame {
	if int(c.streams.Add(1)) > c.opts.MaxStreams {
		c.streams.Add(-1)
		return errFrame(KindEnd, f.ID, api.Errorf(http.StatusTooManyRequests, api.CodeRateLimited,
			"%s: %d streams running", f.Method, c.opts.MaxStreams))
	}
	defer c.streams.Add(-1)
	c.mu.Lock()
	h := c.shandlers[f.Method]
	c.mu.Unlock()
	if h == nil {
		return errFrame(KindEnd, f.ID, unknownMethod(f))
	}
	send := func(item any) error {
		b, err := json.Marshal(item)
		if err != nil {
			return fmt.Errorf("wire: %s: encode item: %w", f.Method, err)
		}
		if err := s.take(ctx); err != nil {
			return err
		}
		return c.send(ctx, &Frame{Kind: KindItem, ID: f.ID, Body: b})
	}
	_, err := runHandler(func() (any, error) {
		return nil, h(ctx, &Request{ID: f.ID, Method: f.Method, Key: f.Key, Body: f.Body}, send)
	})
	if err != nil {
		return errFrame(KindEnd, f.ID, handlerError(ctx, f.Method, err))
	}
	return &Frame{Kind: KindEnd, ID: f.ID}
}
