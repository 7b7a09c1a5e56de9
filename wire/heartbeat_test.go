package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/api"
)

const (
	hbInterval = 50 * time.Millisecond
	hbGrace    = 100 * time.Millisecond
	// hbSlack is what timer and scheduling delays (under -race, on a
	// loaded machine) may add to the detection time.
	hbSlack = 250 * time.Millisecond
)

// checkDetection checks that Run ended with a heartbeat timeout within
// Interval+Grace of the last sign of life.
func checkDetection(t *testing.T, c *Conn, runErr error) {
	t.Helper()
	if !errors.Is(runErr, ErrHeartbeatTimeout) {
		t.Fatalf("Run: want ErrHeartbeatTimeout, got %v", runErr)
	}
	silent := time.Since(c.LastSeen())
	if silent < hbInterval+hbGrace || silent > hbInterval+hbGrace+hbSlack {
		t.Fatalf("closed after %v of silence, want %v (+%v slack)", silent, hbInterval+hbGrace, hbSlack)
	}
}

// The hub side: a broker whose process froze after the handshake (a raw
// TCP client that completes the upgrade, then never reads or answers a
// ping). Its socket stays open, so only the heartbeat can notice.
func TestHeartbeatDetectsFrozenClient(t *testing.T) {
	checkLeaks(t)
	type result struct {
		c   *Conn
		err error
	}
	res := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c := NewConn(ws, Options{HeartbeatInterval: hbInterval, Grace: hbGrace})
		pending := make(chan error, 1)
		go func() { pending <- c.Call(context.Background(), "anything", nil, nil) }()
		err = c.Run(context.Background())
		// A call pending on the frozen peer fails as unavailable.
		if e := <-pending; !api.IsCode(e, api.CodeBrokerUnavailable) {
			err = fmt.Errorf("pending call: want unavailable, got %v", e)
		}
		res <- result{c, err}
	}))
	defer srv.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	// Frozen from here on: nothing read, nothing written.
	r := recv(t, res, 5*time.Second, "the hub to give up on the frozen broker")
	checkDetection(t, r.c, r.err)
}

// The broker side: a hub that accepted and then stopped reading.
func TestHeartbeatDetectsFrozenServer(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		<-release // never reads: pings go unanswered
		ws.CloseNow()
	}))
	defer srv.Close()
	defer close(release)
	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(ws, Options{HeartbeatInterval: hbInterval, Grace: hbGrace})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	err = recv(t, runErr, 5*time.Second, "the broker to give up on the frozen hub")
	checkDetection(t, c, err)
	recv(t, c.Done(), time.Second, "Done")
}

// An idle but healthy peer answers pings and stays connected well past
// Interval+Grace. The grace is wide enough that a test binary starved of
// CPU for a moment (two cores, packages tested in parallel: a CI run saw
// a 314 ms stall close the pair under a 250 ms grace) is not taken for a
// dead peer; the watch spans three periods, sixty pings.
func TestHeartbeatKeepsIdlePeer(t *testing.T) {
	p := pair(t, Options{HeartbeatInterval: 50 * time.Millisecond, Grace: time.Second},
		Options{HeartbeatInterval: time.Hour}, nil) // only the hub pings
	select {
	case <-p.hub.Done():
		t.Fatalf("hub closed an idle healthy peer: %v", p.hub.Err())
	case <-p.broker.Done():
		t.Fatalf("broker closed: %v", p.broker.Err())
	case <-time.After(3150 * time.Millisecond): // three Interval+Grace periods
	}
	// Without pongs counted LastSeen would be the connect, 3 s ago.
	if since := time.Since(p.hub.LastSeen()); since > time.Second {
		t.Fatalf("LastSeen is %v ago: pongs are not counted", since)
	}
}
