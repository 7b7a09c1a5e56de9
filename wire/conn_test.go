package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

func TestCallBothDirections(t *testing.T) {
	p := pair(t, Options{}, Options{}, withEcho)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := 0; i < n; i++ {
		for _, c := range []*Conn{p.hub, p.broker} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := Echo{Data: []byte(fmt.Sprintf("%p-%d", c, i))}
				var out Echo
				if err := c.Call(context.Background(), MethodEcho, in, &out); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(in.Data, out.Data) {
					errs <- fmt.Errorf("sent %q, got %q", in.Data, out.Data)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSlowHandlerDoesNotBlockFast(t *testing.T) {
	release := make(chan struct{})
	p := pair(t, Options{}, Options{}, func(c *Conn, hub bool) {
		withEcho(c, hub)
		c.Handle("slow", func(ctx context.Context, _ *Request) (any, error) {
			select {
			case <-release:
				return "slow done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	})
	slow := make(chan error, 1)
	go func() {
		var s string
		slow <- p.hub.Call(context.Background(), "slow", nil, &s)
	}()
	for i := 0; i < 20; i++ {
		if err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("x")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-slow:
		t.Fatalf("slow call returned early: %v", err)
	default:
	}
	close(release)
	if err := recv(t, slow, 5*time.Second, "slow call"); err != nil {
		t.Fatal(err)
	}
}

func TestCancelReachesHandler(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan error, 1)
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.Handle("block", func(ctx context.Context, _ *Request) (any, error) {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- p.hub.Call(ctx, "block", nil, nil) }()
	recv(t, started, 5*time.Second, "handler start")
	cancel()
	if err := recv(t, res, 5*time.Second, "Call to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call: want context.Canceled, got %v", err)
	}
	if err := recv(t, cancelled, 5*time.Second, "handler ctx cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx: want Canceled, got %v", err)
	}
}

func TestDeadlineTimeout(t *testing.T) {
	deadlines := make(chan time.Time, 1)
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.Handle("block", func(ctx context.Context, _ *Request) (any, error) {
			dl, _ := ctx.Deadline()
			deadlines <- dl
			<-ctx.Done()
			return nil, ctx.Err()
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	want, _ := ctx.Deadline()
	start := time.Now()
	err := p.hub.Call(ctx, "block", nil, nil)
	wantCode(t, err, api.CodeBrokerTimeout)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	got := recv(t, deadlines, time.Second, "handler deadline")
	if diff := got.Sub(want); diff < -time.Millisecond || diff > time.Millisecond {
		t.Fatalf("handler deadline %v, caller's %v", got, want)
	}
}

func TestDefaultTimeout(t *testing.T) {
	p := pair(t, Options{DefaultTimeout: 100 * time.Millisecond}, Options{}, func(c *Conn, _ bool) {
		c.Handle("block", func(ctx context.Context, _ *Request) (any, error) {
			if _, ok := ctx.Deadline(); !ok {
				return nil, errors.New("no deadline")
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	})
	wantCode(t, p.hub.Call(context.Background(), "block", nil, nil), api.CodeBrokerTimeout)
}

// closeWith blocks n calls on the broker, then closes one side and checks
// that every pending call fails at once as unavailable.
func testCloseFailsPending(t *testing.T, closeHub bool) {
	var started sync.WaitGroup
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.Handle("block", func(ctx context.Context, _ *Request) (any, error) {
			started.Done()
			<-ctx.Done()
			return nil, ctx.Err()
		})
	})
	const n = 10
	started.Add(n)
	res := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { res <- p.hub.Call(context.Background(), "block", nil, nil) }()
	}
	started.Wait()
	if closeHub {
		p.hub.Close("going away")
	} else {
		p.broker.Close("going away")
	}
	for i := 0; i < n; i++ {
		wantCode(t, recv(t, res, 5*time.Second, "pending call"), api.CodeBrokerUnavailable)
	}
	recv(t, p.hub.Done(), 5*time.Second, "hub Done")
	// A call on a closed Conn fails at once too.
	wantCode(t, p.hub.Call(context.Background(), "block", nil, nil), api.CodeBrokerUnavailable)
}

func TestCloseFailsPendingLocal(t *testing.T)  { testCloseFailsPending(t, true) }
func TestCloseFailsPendingRemote(t *testing.T) { testCloseFailsPending(t, false) }

func TestRunReturnsReason(t *testing.T) {
	p := pair(t, Options{}, Options{}, nil)
	p.broker.Close("maintenance")
	recv(t, p.brokerRun, 5*time.Second, "broker Run")
	if !errors.Is(p.brokerErr, ErrClosed) {
		t.Fatalf("broker Run: want ErrClosed, got %v", p.brokerErr)
	}
	// The hub sees the peer's close frame, reason included.
	recv(t, p.hubRun, 5*time.Second, "hub Run")
	if p.hubErr == nil || !strings.Contains(p.hubErr.Error(), "maintenance") {
		t.Fatalf("hub Run: want the peer's reason, got %v", p.hubErr)
	}
	recv(t, p.hub.Done(), time.Second, "hub Done")
}

func TestRunContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := pairCtx(t, ctx, Options{}, Options{}, nil)
	cancel()
	recv(t, p.brokerRun, 5*time.Second, "broker Run")
	if !errors.Is(p.brokerErr, ErrClosed) || !errors.Is(p.brokerErr, context.Canceled) {
		t.Fatalf("Run: want ErrClosed wrapping Canceled, got %v", p.brokerErr)
	}
	recv(t, p.hubRun, 5*time.Second, "hub Run")
}

func TestIdempotencyKey(t *testing.T) {
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.Handle("key", func(_ context.Context, r *Request) (any, error) { return r.Key, nil })
	})
	var got string
	if err := p.hub.Call(context.Background(), "key", nil, &got, WithKey("create-agent-42")); err != nil {
		t.Fatal(err)
	}
	if got != "create-agent-42" {
		t.Fatalf("handler saw key %q", got)
	}
	if err := p.hub.Call(context.Background(), "key", nil, &got); err != nil || got != "" {
		t.Fatalf("no key: got %q, %v", got, err)
	}
}

func TestErrors(t *testing.T) {
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.Handle("conflict", func(context.Context, *Request) (any, error) {
			return nil, api.Conflict(api.CodeConflict, "agent %s is busy", "a1").WithDetail("agentId", "a1")
		})
		c.Handle("plain", func(context.Context, *Request) (any, error) { return nil, errors.New("disk on fire") })
		c.Handle("panic", func(context.Context, *Request) (any, error) { panic("boom") })
		c.Handle("badresp", func(context.Context, *Request) (any, error) { return func() {}, nil })
	})
	ctx := context.Background()
	e := wantCode(t, p.hub.Call(ctx, "conflict", nil, nil), api.CodeConflict)
	if e.Message != "agent a1 is busy" || e.Details["agentId"] != "a1" {
		t.Fatalf("conflict: got %+v", e)
	}
	e = wantCode(t, p.hub.Call(ctx, "plain", nil, nil), api.CodeInternal)
	if e.Message != "disk on fire" {
		t.Fatalf("plain: got %q", e.Message)
	}
	wantCode(t, p.hub.Call(ctx, "panic", nil, nil), api.CodeInternal)
	wantCode(t, p.hub.Call(ctx, "badresp", nil, nil), api.CodeInternal)
	wantCode(t, p.hub.Call(ctx, "nope", nil, nil), api.CodeMethodNotAllowed)
	wantCode(t, p.hub.Call(ctx, MethodEcho, func() {}, nil), api.CodeInvalidRequest)
	// The connection survived all of that.
	if err := p.hub.Call(ctx, "plain", nil, nil); !api.IsCode(err, api.CodeInternal) {
		t.Fatal(err)
	}
}

func TestConcurrencyBound(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	p := pair(t, Options{}, Options{MaxConcurrent: 2, MaxQueued: 1}, func(c *Conn, hub bool) {
		withEcho(c, hub)
		c.Handle("block", func(ctx context.Context, _ *Request) (any, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
			}
			select {
			case <-release:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	})
	ctx := context.Background()
	res := make(chan error, 3)
	for i := 0; i < 2; i++ {
		go func() { res <- p.hub.Call(ctx, "block", nil, nil) }()
	}
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n := running.Load(); n != 2 {
			return fmt.Errorf("%d handlers running, want 2", n)
		}
		return nil
	})

	// A third waits; cancelling it reaches it while it waits (the read
	// loop is not stuck behind it).
	cctx, cancel := context.WithCancel(ctx)
	cres := make(chan error, 1)
	go func() { cres <- p.hub.Call(cctx, "block", nil, nil) }()
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n := p.broker.queued.Load(); n != 1 {
			return fmt.Errorf("%d calls queued, want 1", n)
		}
		return nil
	})
	cancel()
	if err := recv(t, cres, 5*time.Second, "cancelled call"); !errors.Is(err, context.Canceled) {
		t.Fatalf("want Canceled, got %v", err)
	}
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n := p.broker.queued.Load(); n != 0 {
			return fmt.Errorf("%d calls queued, want 0", n)
		}
		return nil
	})

	go func() { res <- p.hub.Call(ctx, "block", nil, nil) }()
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n := p.broker.queued.Load(); n != 1 {
			return fmt.Errorf("%d calls queued, want 1", n)
		}
		return nil
	})
	// A fourth is refused rather than queued without bound.
	wantCode(t, p.hub.Call(ctx, "block", nil, nil), api.CodeRateLimited)
	// Responses still flow to the busy side.
	if err := p.broker.Call(ctx, MethodEcho, Echo{Data: []byte("hi")}, nil); err != nil {
		t.Fatal(err)
	}
	close(release)
	for i := 0; i < 3; i++ {
		if err := recv(t, res, 5*time.Second, "blocked call"); err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() != 2 {
		t.Fatalf("peak concurrency %d, want 2", peak.Load())
	}
}

// The goroutine that reads a request also serves it (readLoop passes the
// read turn on first). A handler that never returns must not stop the
// Conn reading: pings keep the peer alive past Interval+Grace, other calls
// are answered, and Run still returns when the Conn ends.
func TestStuckHandlerKeepsConnReading(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	entered := make(chan struct{}, 1)
	p := pair(t, Options{HeartbeatInterval: time.Hour},
		Options{HeartbeatInterval: 50 * time.Millisecond, Grace: 250 * time.Millisecond},
		func(c *Conn, hub bool) {
			withEcho(c, hub)
			// Ignores its ctx on purpose.
			c.Handle("stuck", func(context.Context, *Request) (any, error) {
				entered <- struct{}{}
				<-stuck
				return nil, nil
			})
		})
	go func() { _ = p.broker.Call(context.Background(), "stuck", nil, nil) }()
	recv(t, entered, 5*time.Second, "the stuck handler to start")
	select {
	case <-p.broker.Done():
		t.Fatalf("broker closed while the hub's handler was stuck: %v", p.broker.Err())
	case <-time.After(1500 * time.Millisecond): // five Interval+Grace periods of broker pings
	}
	if err := p.broker.Call(context.Background(), MethodEcho, Echo{Data: []byte("x")}, nil); err != nil {
		t.Fatalf("echo beside a stuck handler: %v", err)
	}
	p.hub.Close("test")
	recv(t, p.hubRun, 5*time.Second, "hub Run to return while its handler is stuck")
}

// Start serves like Run without holding its caller: it returns at once,
// calls are answered, and ended gets the reason once, when the Conn ends.
func TestStartCallsEndedOnce(t *testing.T) {
	checkLeaks(t)
	ended := make(chan error, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, Options{})
		if err != nil {
			return
		}
		c.Handle(MethodEcho, echoHandler)
		if err := c.Start(context.Background(), func(reason error) { ended <- reason }); err != nil {
			t.Error(err)
		}
		if err := c.Start(context.Background(), func(error) {}); err == nil {
			t.Error("a second Start was accepted")
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	broker, _, err := dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	brokerRun := make(chan error, 1)
	go func() { brokerRun <- broker.Run(context.Background()) }()
	if err := broker.Call(ctx, MethodEcho, Echo{Data: []byte("x")}, nil); err != nil {
		t.Fatal(err)
	}
	broker.Close("going away")
	recv(t, brokerRun, 5*time.Second, "broker Run")
	reason := recv(t, ended, 5*time.Second, "the hub's ended callback")
	if reason == nil || !strings.Contains(reason.Error(), "going away") {
		t.Fatalf("ended with %v, want the peer's reason", reason)
	}
	select {
	case again := <-ended:
		t.Fatalf("ended called twice (again with %v)", again)
	case <-time.After(100 * time.Millisecond):
	}
}
