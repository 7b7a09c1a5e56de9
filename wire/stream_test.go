package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

func logsHandler(n int, fail error) StreamHandler {
	return func(ctx context.Context, req *Request, send func(any) error) error {
		var lr LogsRequest
		if err := req.Decode(&lr); err != nil {
			return api.BadRequest("%v", err)
		}
		for i := 0; i < n; i++ {
			if err := send(LogChunk{Stream: "stdout", Data: fmt.Sprintf("%s line %d", lr.AgentID, i)}); err != nil {
				return err
			}
		}
		return fail
	}
}

func TestStreamHappyPath(t *testing.T) {
	p := pair(t, Options{}, Options{StreamWindow: 8}, func(c *Conn, _ bool) {
		c.HandleStream(MethodAgentLogs, logsHandler(100, nil))
	})
	// The broker opens it with a small window: the handler must wait for
	// credit many times over.
	s, err := p.broker.Stream(context.Background(), MethodAgentLogs, LogsRequest{AgentID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		var ch LogChunk
		if err := s.Recv(&ch); err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		if want := fmt.Sprintf("a1 line %d", i); ch.Data != want {
			t.Fatalf("item %d: got %q want %q", i, ch.Data, want)
		}
	}
	if err := s.Recv(nil); err != io.EOF {
		t.Fatalf("after the last item: want io.EOF, got %v", err)
	}
	if err := s.Recv(nil); err != io.EOF {
		t.Fatalf("again: want io.EOF, got %v", err)
	}
	s.Close()
}

func TestStreamHandlerError(t *testing.T) {
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.HandleStream(MethodAgentLogs, logsHandler(3, api.NotFound(api.CodeAgentNotFound, "agent gone")))
	})
	s, err := p.hub.Stream(context.Background(), MethodAgentLogs, LogsRequest{AgentID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.Recv(nil); err != nil {
			t.Fatal(err)
		}
	}
	e := wantCode(t, s.Recv(nil), api.CodeAgentNotFound)
	if e.Message != "agent gone" {
		t.Fatalf("message %q", e.Message)
	}
	// An unknown stream method fails at the first Recv.
	s, err = p.hub.Stream(context.Background(), "nope", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Recv(nil), api.CodeMethodNotAllowed)
}

func endlessHandler(sent *atomic.Int64, ended chan<- error) StreamHandler {
	return func(ctx context.Context, _ *Request, send func(any) error) error {
		for {
			if err := send(LogChunk{Data: "tick"}); err != nil {
				ended <- ctx.Err()
				return err
			}
			sent.Add(1)
		}
	}
}

func TestStreamClose(t *testing.T) {
	var sent atomic.Int64
	ended := make(chan error, 1)
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.HandleStream(MethodAgentLogs, endlessHandler(&sent, ended))
	})
	s, err := p.hub.Stream(context.Background(), MethodAgentLogs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := s.Recv(nil); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if err := recv(t, ended, 5*time.Second, "handler to see the cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx: %v", err)
	}
	if err := s.Recv(nil); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("Recv after Close: %v", err)
	}
}

func TestStreamContext(t *testing.T) {
	var sent atomic.Int64
	ended := make(chan error, 2)
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.HandleStream(MethodAgentLogs, endlessHandler(&sent, ended))
	})
	// Cancelling the ctx cancels the handler.
	ctx, cancel := context.WithCancel(context.Background())
	s, err := p.hub.Stream(ctx, MethodAgentLogs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recv(nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	recv(t, ended, 5*time.Second, "handler to see the cancel")
	// Recv reports the cancellation (at once, or after buffered items).
	for err = s.Recv(nil); err == nil; err = s.Recv(nil) {
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv after cancel: %v", err)
	}
	// A deadline gives a timeout; the handler's ctx carries it.
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	s, err = p.hub.Stream(ctx, MethodAgentLogs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for err = s.Recv(nil); err == nil; err = s.Recv(nil) {
	}
	wantCode(t, err, api.CodeBrokerTimeout)
	if err := recv(t, ended, 5*time.Second, "handler deadline"); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx: %v", err)
	}
}

// A consumer that stops reading holds the handler at the window, and
// other traffic on the connection is unaffected.
func TestStreamBackPressure(t *testing.T) {
	const window = 4
	var sent atomic.Int64
	ended := make(chan error, 1)
	p := pair(t, Options{StreamWindow: window}, Options{}, func(c *Conn, hub bool) {
		withEcho(c, hub)
		c.HandleStream(MethodAgentLogs, endlessHandler(&sent, ended))
	})
	s, err := p.hub.Stream(context.Background(), MethodAgentLogs, nil)
	if err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n := sent.Load(); n != window {
			return fmt.Errorf("the handler sent %d items, want the window of %d filled", n, window)
		}
		return nil
	})
	// The handler is now blocked in send. Unrelated calls still work both
	// ways while the stream is stalled.
	for i := 0; i < 10; i++ {
		for _, c := range []*Conn{p.hub, p.broker} {
			if err := c.Call(context.Background(), MethodEcho, Echo{Data: []byte("x")}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := sent.Load(); n != window {
		t.Fatalf("handler sent %d items past a window of %d", n, window)
	}
	if n := len(p.hub.lookup(s.id).ch); n > window {
		t.Fatalf("receiver buffers %d items, window %d", n, window)
	}
	// Consuming releases the handler, a window at a time.
	for i := 0; i < 10*window; i++ {
		if err := s.Recv(nil); err != nil {
			t.Fatal(err)
		}
	}
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n := sent.Load(); n < 10*window {
			return fmt.Errorf("the handler sent %d items, want at least %d", n, 10*window)
		}
		return nil
	})
	s.Close()
	recv(t, ended, 5*time.Second, "handler end")
}

func TestStreamConnClosed(t *testing.T) {
	var sent atomic.Int64
	ended := make(chan error, 1)
	p := pair(t, Options{}, Options{}, func(c *Conn, _ bool) {
		c.HandleStream(MethodAgentLogs, endlessHandler(&sent, ended))
	})
	s, err := p.hub.Stream(context.Background(), MethodAgentLogs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Recv(nil); err != nil {
		t.Fatal(err)
	}
	p.broker.Close("bye")
	for err = s.Recv(nil); err == nil; err = s.Recv(nil) {
	}
	wantCode(t, err, api.CodeBrokerUnavailable)
	recv(t, ended, 5*time.Second, "handler end")
}
