package wire

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(b)
	return b
}

func TestLargeBodies(t *testing.T) {
	p := pair(t, Options{}, Options{}, withEcho)
	for _, tc := range []struct {
		n     int
		conns []*Conn
	}{
		{1 << 20, []*Conn{p.hub, p.broker}},
		{10 << 20, []*Conn{p.hub}}, // slow under -race: one direction
	} {
		n := tc.n
		in := Echo{Data: randomBytes(n)}
		for _, c := range tc.conns {
			var out Echo
			if err := c.Call(context.Background(), MethodEcho, in, &out); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			if !bytes.Equal(in.Data, out.Data) {
				t.Fatalf("%d bytes: echo differs", n)
			}
		}
	}
}

func TestTooLargeLocal(t *testing.T) {
	p := pair(t, Options{MaxMessage: 1 << 20}, Options{}, withEcho)
	err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: make([]byte, 2<<20)}, nil)
	wantCode(t, err, api.CodeRequestTooLarge)
	if err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("ok")}, nil); err != nil {
		t.Fatalf("connection did not survive: %v", err)
	}
}

// The receiver's limit is lower than the sender's: the receiver refuses
// the message after its first chunk and fails that request alone.
func TestTooLargeRemoteRequest(t *testing.T) {
	p := pair(t, Options{}, Options{MaxMessage: 1 << 20}, withEcho)
	err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: make([]byte, 2<<20)}, nil)
	wantCode(t, err, api.CodeRequestTooLarge)
	if err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("ok")}, nil); err != nil {
		t.Fatalf("connection did not survive: %v", err)
	}
}

func TestTooLargeResponse(t *testing.T) {
	big := func(context.Context, *Request) (any, error) { return Echo{Data: make([]byte, 2<<20)}, nil }
	// The responder's own limit: it answers request_too_large instead.
	p := pair(t, Options{}, Options{MaxMessage: 1 << 20}, func(c *Conn, hub bool) {
		withEcho(c, hub)
		c.Handle("big", big)
	})
	wantCode(t, p.hub.Call(context.Background(), "big", nil, nil), api.CodeRequestTooLarge)
	// The caller's limit: it refuses the response.
	wantCode(t, p.broker.Call(context.Background(), "big", nil, nil), api.CodeRequestTooLarge)
	for _, c := range []*Conn{p.hub, p.broker} {
		if err := c.Call(context.Background(), MethodEcho, Echo{Data: []byte("ok")}, nil); err != nil {
			t.Fatalf("connection did not survive: %v", err)
		}
	}
}

// A small call is not stuck behind a big message being written: the write
// lock is released between chunks.
func TestChunksInterleave(t *testing.T) {
	bigDone := make(chan struct{})
	p := pair(t, Options{}, Options{}, func(c *Conn, hub bool) {
		withEcho(c, hub)
		c.Handle("sink", func(context.Context, *Request) (any, error) {
			close(bigDone)
			return nil, nil
		})
	})
	res := make(chan error, 1)
	go func() {
		res <- p.hub.Call(context.Background(), "sink", Echo{Data: make([]byte, 16<<20)}, nil)
	}()
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if p.hub.chunkSeq.Load() == 0 {
			return errors.New("no chunk of the big message sent yet")
		}
		return nil
	})
	if err := p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("small")}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-bigDone:
		t.Fatal("small call waited for the whole big message")
	default:
	}
	if err := recv(t, res, 30*time.Second, "big call"); err != nil {
		t.Fatal(err)
	}
}
