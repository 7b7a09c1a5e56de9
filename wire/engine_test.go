package wire

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// A handler's ctx is the request itself (serving), with a timer only once
// Done is asked for: check it behaves as a context.WithDeadline child of
// the Conn's hctx would.
func TestServingContext(t *testing.T) {
	newServing := func(d time.Duration) (*serving, context.CancelCauseFunc) {
		c := &Conn{}
		c.hctx, c.hcancel = context.WithCancelCause(context.Background())
		s := &serving{c: c}
		if d > 0 {
			s.deadline = time.Now().Add(d)
		}
		return s, c.hcancel
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	// Err alone notices the deadline, without Done ever being asked for.
	s, _ := newServing(20 * time.Millisecond)
	if dl, ok := s.Deadline(); !ok || dl != s.deadline {
		t.Fatalf("Deadline: %v %v", dl, ok)
	}
	if s.Err() != nil {
		t.Fatal("ended early")
	}
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		err := s.Err()
		if err != nil && time.Now().Before(s.deadline) {
			t.Fatalf("Err before the deadline: %v", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("Err %v, want DeadlineExceeded once the deadline (%v) passed", err, s.deadline)
		}
		return nil
	})
	if !closed(s.Done()) || s.timer != nil {
		t.Fatal("Done after the end: not closed, or a timer armed")
	}

	// Done arms a timer that ends it at the deadline.
	s, _ = newServing(20 * time.Millisecond)
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("deadline did not end the ctx")
	}
	if err := s.Err(); !errors.Is(err, context.DeadlineExceeded) || context.Cause(s) != context.DeadlineExceeded {
		t.Fatalf("Err %v, Cause %v", err, context.Cause(s))
	}

	// The Conn ending ends it, with the Conn's reason as the cause; and
	// derived contexts and AfterFuncs follow it, or stop following.
	s, hcancel := newServing(0)
	if _, ok := s.Deadline(); ok {
		t.Fatal("deadline without one")
	}
	child, cancel := context.WithCancel(s)
	defer cancel()
	ran := make(chan struct{})
	context.AfterFunc(s, func() { close(ran) })
	stop := context.AfterFunc(s, func() { t.Error("stopped AfterFunc ran") })
	if !stop() || stop() {
		t.Fatal("stop of a pending AfterFunc")
	}
	reason := errors.New("maintenance")
	hcancel(reason)
	recv(t, child.Done(), 5*time.Second, "derived ctx")
	recv(t, ran, 5*time.Second, "AfterFunc")
	if !errors.Is(s.Err(), context.Canceled) || context.Cause(s) != reason || context.Cause(child) != reason {
		t.Fatalf("Err %v, Cause %v, child's %v", s.Err(), context.Cause(s), context.Cause(child))
	}
	// AfterFunc on an ended ctx runs at once.
	again := make(chan struct{})
	context.AfterFunc(s, func() { close(again) })
	recv(t, again, 5*time.Second, "AfterFunc after the end")

	// end (the handler returned, or the caller cancelled) releases what
	// Done armed.
	s, _ = newServing(time.Hour)
	done := s.Done()
	s.end(context.Canceled)
	if !closed(done) || s.timer != nil || s.stopParent != nil || !errors.Is(s.Err(), context.Canceled) {
		t.Fatal("end did not release the ctx")
	}
}

// Handlers derive contexts from theirs; a caller's cancel reaches them.
func TestHandlerContextDerived(t *testing.T) {
	derived := make(chan error, 1)
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.Handle("derive", func(ctx context.Context, _ *Request) (any, error) {
			child, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			<-child.Done()
			derived <- child.Err()
			return nil, child.Err()
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- p.hub.Call(ctx, "derive", nil, nil) }()
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		p.broker.mu.Lock()
		defer p.broker.mu.Unlock()
		if n := len(p.broker.incoming); n != 1 {
			return fmt.Errorf("%d handlers running, want 1 (handler to start)", n)
		}
		return nil
	})
	cancel()
	if err := recv(t, derived, 5*time.Second, "derived ctx"); !errors.Is(err, context.Canceled) {
		t.Fatalf("derived ctx: %v", err)
	}
	if err := recv(t, res, 5*time.Second, "call"); !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
}

// Calls without a deadline share one timer (the sweeper): each still
// times out at its own DefaultTimeout, and a call answered in time is not
// affected by the others.
func TestDefaultTimeoutSweeper(t *testing.T) {
	const timeout = 150 * time.Millisecond
	p := pair(t, Options{DefaultTimeout: timeout}, Options{}, func(c *Conn, hub bool) {
		withEcho(c, hub)
		c.Handle("block", func(ctx context.Context, _ *Request) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	})
	const n = 3
	type result struct {
		took time.Duration
		err  error
	}
	res := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() {
			start := time.Now()
			err := p.hub.Call(context.Background(), "block", nil, nil)
			res <- result{time.Since(start), err}
		}()
		time.Sleep(timeout / 3)
		if err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("x")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		r := recv(t, res, 5*time.Second, "timed out call")
		wantCode(t, r.err, api.CodeBrokerTimeout)
		// (The handler's deadline, in milliseconds on the wire, may end
		// it, and so the call, a little before the caller's own.)
		if r.took < timeout-2*time.Millisecond || r.took > timeout+time.Second {
			t.Fatalf("timed out after %v, want %v", r.took, timeout)
		}
	}
	// The handlers were told (the peer also knows the deadline).
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		p.broker.mu.Lock()
		defer p.broker.mu.Unlock()
		if n := len(p.broker.incoming); n != 0 {
			return fmt.Errorf("%d handlers running, want 0 (handlers to end)", n)
		}
		return nil
	})
	if err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("x")}, nil); err != nil {
		t.Fatal(err)
	}
}

// Calls are recycled: a response that arrives for a call that was given
// up on must never reach a later call.
func TestLateResponsesAreNotMisdelivered(t *testing.T) {
	var slow atomic.Int64
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.Handle("id", func(_ context.Context, r *Request) (any, error) {
			var n int
			if err := r.Decode(&n); err != nil {
				return nil, err
			}
			if n%3 == 0 {
				slow.Add(1)
				time.Sleep(time.Millisecond) // answered after the caller gave up
			}
			return n, nil
		})
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * 1000; i < g*1000+200; i++ {
				ctx := context.Background()
				var cancel context.CancelFunc = func() {}
				if i%3 == 0 {
					ctx, cancel = context.WithTimeout(ctx, 200*time.Microsecond)
				}
				var got int
				err := p.hub.Call(ctx, "id", i, &got)
				cancel()
				switch {
				case i%3 == 0 && err != nil && !api.IsCode(err, api.CodeBrokerTimeout):
					errs <- fmt.Errorf("call %d: %v", i, err)
					return
				case i%3 == 0:
				case err != nil:
					errs <- fmt.Errorf("call %d: %v", i, err)
					return
				case got != i:
					errs <- fmt.Errorf("call %d got the response of call %d", i, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if slow.Load() == 0 {
		t.Fatal("no slow call")
	}
}

// plainRun (eight bytes at a time) agrees with the obvious loop.
func TestPlainRun(t *testing.T) {
	naive := func(b []byte) int {
		for i, c := range b {
			if c < 0x20 || c == '"' || c == '\\' {
				return i
			}
		}
		return len(b)
	}
	r := rand.New(rand.NewPCG(1, 2))
	special := []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 'a'}
	for i := 0; i < 100000; i++ {
		b := make([]byte, r.IntN(40))
		for j := range b {
			if r.IntN(8) == 0 {
				b[j] = special[r.IntN(len(special))]
			} else {
				b[j] = byte(r.IntN(256))
			}
		}
		if got, want := plainRun(b), naive(b); got != want {
			t.Fatalf("plainRun(%q) = %d, want %d", b, got, want)
		}
	}
}

// DefaultTimeout also bounds a wait for room in a full outbox.
func TestDefaultTimeoutBoundsQueueWait(t *testing.T) {
	p := pair(t, Options{DefaultTimeout: 100 * time.Millisecond}, Options{}, withEcho)
	o := &p.hub.out
	o.mu.Lock()
	o.busy = true      // as if a write were in progress
	o.qBytes = 1 << 30 // and the queue full
	o.mu.Unlock()
	start := time.Now()
	wantCode(t, p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("x")}, nil), api.CodeBrokerTimeout)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	o.mu.Lock()
	o.busy, o.qBytes = false, 0
	o.mu.Unlock()
	if err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("x")}, nil); err != nil {
		t.Fatal(err)
	}
}

// Calls are recycled across Conns: calls given up on, or failed, while a
// Conn shuts down must not leak an outcome into another Conn's calls.
func TestRecycledCallsAcrossShutdown(t *testing.T) {
	id := func(c *Conn, _ bool) {
		c.Handle("id", func(_ context.Context, r *Request) (any, error) {
			var n int
			err := r.Decode(&n)
			return n, err
		})
	}
	a := pair(t, Options{}, Options{}, id)
	b := pair(t, Options{}, Options{}, id)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() { // on a, with short timeouts, until it closes
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%50)*time.Microsecond)
				_ = a.hub.Call(ctx, "id", i, nil)
				cancel()
			}
		}()
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() { // on b: every answer must be its own
			defer wg.Done()
			for i := g * 100000; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var got int
				if err := b.hub.Call(context.Background(), "id", i, &got); err != nil || got != i {
					errs <- fmt.Errorf("call %d: got %d, %v", i, got, err)
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	a.broker.Close("going away")
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
