package wire

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
)

// A client may send its first frame in the same packet as the upgrade
// request; Accept's smaller buffers must keep those early bytes.
func TestAcceptEarlyData(t *testing.T) {
	checkLeaks(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, Options{})
		if err != nil {
			return
		}
		withEcho(c, true)
		go c.Run(context.Background())
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))

	req := []byte(`{"k":"request","id":1,"m":"echo","b":{"data":"aGk="}}`)
	key := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x81, 0x80 | byte(len(req))}, key[:]...)
	for i, b := range req {
		frame = append(frame, b^key[i%4])
	}
	msg := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" + string(frame)
	if _, err := conn.Write([]byte(msg)); err != nil { // one write: the frame rides with the request
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if hdr[0] != 0x81 || hdr[1] >= 126 {
		t.Fatalf("unexpected frame header %x", hdr)
	}
	payload := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, payload); err != nil {
		t.Fatal(err)
	}
	f, err := decodeFrame(payload)
	if err != nil || f.Kind != KindResponse || f.ID != 1 || string(f.Body) != `{"data":"aGk="}` {
		t.Fatalf("response %s: %+v %v", payload, f, err)
	}
}

// Dial carries the broker's signed headers; the Hub verifies them.
func TestDialSignedHeaders(t *testing.T) {
	checkLeaks(t)
	nonces := NewNonceCache(time.Minute, 100)
	verified := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := nonces.Verify(r.Header.Get(HeaderBrokerID), testSecret, SignedRequest{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery}, r.Header, time.Now())
		verified <- err
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		c, err := Accept(w, r, Options{})
		if err != nil {
			return
		}
		go c.Run(context.Background())
	}))
	defer srv.Close()
	h := http.Header{}
	SignHeaders(h, "b1", testSecret, SignedRequest{Method: http.MethodGet, Path: "/api/v1/brokers/connect"}, time.Now())
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/v1/brokers/connect"
	c, _, err := dial(context.Background(), url, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := recv(t, verified, 5*time.Second, "verification"); err != nil {
		t.Fatal(err)
	}
	c.Close("done")
	// The same headers again are a replay.
	if _, resp, err := dial(context.Background(), url, h, Options{}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("replayed dial: %v", err)
	}
	if err := recv(t, verified, 5*time.Second, "verification"); err == nil {
		t.Fatal("replay verified")
	}
}

// Frames queued while a write is in progress go out batched in one
// message, and the reader splits them again.
func TestOutboxBatches(t *testing.T) {
	p := pair(t, Options{}, Options{}, withEcho)
	o := &p.hub.out
	o.mu.Lock()
	o.busy = true // as if a write were in progress: senders queue
	o.mu.Unlock()
	const n = 10
	res := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { res <- p.hub.Call(context.Background(), MethodEcho, Echo{Data: []byte("q")}, nil) }()
	}
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		o.mu.Lock()
		defer o.mu.Unlock()
		if q := len(o.q); q != n {
			return fmt.Errorf("%d frames queued, want %d", q, n)
		}
		return nil
	})
	p.hub.drain(1) // one batch: all ten in one message
	for i := 0; i < n; i++ {
		if err := recv(t, res, 5*time.Second, "batched call"); err != nil {
			t.Fatal(err)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.busy || len(o.q) != 0 {
		t.Fatalf("outbox not idle: busy=%v queued=%d", o.busy, len(o.q))
	}
}

func TestDecodeFrames(t *testing.T) {
	var got []uint64
	err := decodeFrames([]byte("{\"k\":\"cancel\",\"id\":1}\n{\"k\":\"cancel\",\"id\":2} \n {\"k\":\"credit\",\"id\":3,\"cr\":4}"), func(f *Frame) error {
		got = append(got, f.ID)
		return nil
	})
	if err != nil || len(got) != 3 || got[2] != 3 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", " ", "{\"k\":\"cancel\",\"id\":1}x", "{\"k\":\"cancel\",\"id\":1}\n{}", "{\"k\":\"cancel\",\"id\":1}{"} {
		if err := decodeFrames([]byte(bad), func(*Frame) error { return nil }); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
