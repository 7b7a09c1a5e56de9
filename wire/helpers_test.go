package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

// recv waits for a value on ch, failing the test after d.
func recv[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		panic("unreachable")
	}
}

// checkLeaks registers a cleanup (run last, as cleanups run in reverse)
// that waits for the goroutine count to come back to what it is now.
func checkLeaks(t testing.TB) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		_, err := wait.Until(10*time.Second, 5*time.Millisecond, func() error {
			if n := runtime.NumGoroutine(); n > base {
				return fmt.Errorf("goroutine leak: %d running, %d before", n, base)
			}
			return nil
		})
		if err != nil {
			buf := make([]byte, 1<<20)
			t.Fatalf("%v\n%s", err, buf[:runtime.Stack(buf, true)])
		}
	})
}

// conns is a hub and a broker Conn connected over a real loopback
// WebSocket, both running.
type conns struct {
	hub, broker *Conn
	// hubRun and brokerRun are closed when Run returned, with its error
	// in hubErr and brokerErr.
	hubRun, brokerRun chan struct{}
	hubErr, brokerErr error
}

// pair connects a hub (server) and a broker (client). setup registers
// handlers before either side runs. Cleanup closes both and checks that no
// goroutine was left behind.
func pair(t testing.TB, hubOpts, brokerOpts Options, setup func(c *Conn, hub bool)) *conns {
	return pairCtx(t, context.Background(), hubOpts, brokerOpts, setup)
}

// pairCtx is pair with the broker running under brokerCtx.
func pairCtx(t testing.TB, brokerCtx context.Context, hubOpts, brokerOpts Options, setup func(c *Conn, hub bool)) *conns {
	t.Helper()
	checkLeaks(t)
	p := &conns{hubRun: make(chan struct{}), brokerRun: make(chan struct{})}
	hubCh := make(chan *Conn, 1)
	// The way the Hub is meant to run: Accept, Run on its own goroutine,
	// return from the handler.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, hubOpts)
		if err != nil {
			return
		}
		if setup != nil {
			setup(c, true)
		}
		hubCh <- c
		go func() {
			p.hubErr = c.Run(context.Background())
			close(p.hubRun)
		}()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	broker, _, err := dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil, brokerOpts)
	if err != nil {
		t.Fatal(err)
	}
	p.broker = broker
	if setup != nil {
		setup(p.broker, false)
	}
	go func() {
		p.brokerErr = p.broker.Run(brokerCtx)
		close(p.brokerRun)
	}()
	p.hub = recv(t, hubCh, 5*time.Second, "hub conn")
	t.Cleanup(func() {
		p.broker.Close("test done")
		p.hub.Close("test done")
		recv(t, p.hubRun, 10*time.Second, "hub Run to return")
		recv(t, p.brokerRun, 10*time.Second, "broker Run to return")
		srv.Close()
	})
	return p
}

func echoHandler(ctx context.Context, req *Request) (any, error) {
	var e Echo
	if err := req.Decode(&e); err != nil {
		return nil, api.BadRequest("bad echo: %v", err)
	}
	return e, nil
}

func withEcho(c *Conn, _ bool) { c.Handle(MethodEcho, echoHandler) }

// wantCode fails unless err is an *api.Error with code (and its status).
func wantCode(t *testing.T, err error, code string) *api.Error {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *api.Error %s, got %T %v", code, err, err)
	}
	if e.Code != code {
		t.Fatalf("want code %s, got %s (%s)", code, e.Code, e.Message)
	}
	if e.Status != api.StatusForCode(code) {
		t.Fatalf("code %s: want status %d, got %d", code, api.StatusForCode(code), e.Status)
	}
	return e
}
