package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// testHub is the smallest Hub a broker can talk to: it verifies the signed
// upgrade, runs a wire.Conn, answers hello and records what the broker
// sends. Tests call broker methods through Call.
type testHub struct {
	t        *testing.T
	srv      *httptest.Server
	brokerID string
	secret   []byte
	nonces   *seenNonces

	dials        atomic.Int32
	rejectHellos atomic.Int32 // refuse this many more hellos
	// refuseWith, while set, is the answer to every hello (a Hub that
	// refuses the broker: experiment_disabled, say).
	refuseWith atomic.Pointer[api.Error]
	hellos     chan wire.Hello
	statuses   chan wire.AgentStatus
	// jobUpdates are the job.update calls the Hub took; dropOnUpdates,
	// while positive, makes the Hub drop the channel on this many more
	// instead of answering (an update lost with the connection).
	jobUpdates    chan wire.JobUpdate
	dropOnUpdates atomic.Int32

	mu   sync.Mutex
	conn *wire.Conn // the session whose hello was accepted last
}

func newTestHub(t *testing.T) *testHub {
	h := &testHub{
		t: t, brokerID: "broker-1", secret: []byte("s3cret"),
		nonces:     &seenNonces{m: map[string]bool{}},
		hellos:     make(chan wire.Hello, 100),
		statuses:   make(chan wire.AgentStatus, 100),
		jobUpdates: make(chan wire.JobUpdate, 100),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+connectPath, h.connect)
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	return h
}

// seenNonces is the test Hub's replay check: the signature as the Hub
// verifies it, and every nonce refused the second time (the Hub keeps
// them in its database until they leave the window).
type seenNonces struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *seenNonces) verify(brokerID string, secret []byte, r wire.SignedRequest, h http.Header, now time.Time) error {
	n, err := wire.VerifySignature(brokerID, secret, r, h, now, time.Minute)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[n.Value] {
		return wire.ErrReplay
	}
	s.m[n.Value] = true
	return nil
}

func (h *testHub) connect(w http.ResponseWriter, r *http.Request) {
	h.dials.Add(1)
	if err := h.nonces.verify(h.brokerID, h.secret, wire.SignedRequest{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery}, r.Header, time.Now()); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Unauthorized("invalid broker credentials")})
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	conn := wire.NewConn(ws, wire.Options{})
	conn.Handle(wire.MethodHello, func(_ context.Context, req *wire.Request) (any, error) {
		var hello wire.Hello
		if err := req.Decode(&hello); err != nil {
			return nil, api.BadRequest("%v", err)
		}
		h.hellos <- hello
		if e := h.refuseWith.Load(); e != nil {
			return nil, e
		}
		if h.rejectHellos.Add(-1) >= 0 {
			return nil, api.BadRequest("hello refused by the test")
		}
		h.mu.Lock()
		h.conn = conn
		h.mu.Unlock()
		return wire.HelloReply{ProtocolVersion: wire.ProtocolVersion, SessionID: fmt.Sprint("session-", h.dials.Load())}, nil
	})
	conn.Handle(wire.MethodAgentStatus, func(_ context.Context, req *wire.Request) (any, error) {
		var st wire.AgentStatus
		if err := req.Decode(&st); err != nil {
			return nil, err
		}
		h.statuses <- st
		return struct{}{}, nil
	})
	conn.Handle(wire.MethodJobUpdate, func(_ context.Context, req *wire.Request) (any, error) {
		var u wire.JobUpdate
		if err := req.Decode(&u); err != nil {
			return nil, err
		}
		if h.dropOnUpdates.Add(-1) >= 0 {
			_ = conn.Close("dropped by the test")
			return nil, api.Errorf(api.CodeBrokerUnavailable, "dropped")
		}
		h.jobUpdates <- u
		return struct{}{}, nil
	})
	_ = conn.Run(r.Context())
}

// current is the live session's channel.
func (h *testHub) current() *wire.Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn
}

// call sends one command to the broker. Its bound is the harness's, not
// a latency the tests assert: a create that clones a repository took
// more than 10 s on a loaded CI run.
func (h *testHub) call(method string, req, resp any, opts ...wire.CallOption) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.current().Call(ctx, method, req, resp, opts...)
}

// logsError opens a logs stream that must fail and returns its error.
func (h *testHub) logsError(req wire.LogsRequest) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := h.current().Stream(ctx, wire.MethodAgentLogs, req)
	if err != nil {
		return err
	}
	defer st.Close()
	var c wire.LogChunk
	for err == nil {
		err = st.Recv(&c)
	}
	return err
}

// status calls a lifecycle method that must succeed and returns the
// agent's status.
func (h *testHub) status(method string, req any) wire.AgentStatus {
	h.t.Helper()
	var st wire.AgentStatus
	if err := h.call(method, req, &st); err != nil {
		h.t.Fatalf("%s: %v", method, err)
	}
	return st
}

// startBroker runs a broker against h until the test ends and waits for
// its first session.
func startBroker(t *testing.T, h *testHub, rt runtime.Runtime, edit func(*Config)) *Broker {
	t.Helper()
	cfg := Config{
		HubEndpoint: h.srv.URL, BrokerID: h.brokerID, Name: "test", Secret: h.secret,
		Runtime: rt, DataDir: t.TempDir(), Version: "test",
		Logger:     slog.New(slog.DiscardHandler),
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	}
	if edit != nil {
		edit(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return b
}

// waitConnected waits for the broker's session.
func waitConnected(t *testing.T, b *Broker) {
	t.Helper()
	waitStatus(t, b, "connected", func(s Status) bool { return s.Connected })
}

func waitStatus(t *testing.T, b *Broker, what string, cond func(Status) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.waitStatus(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v (status %+v)", what, err, b.Status())
	}
}

// recv takes one value from ch or fails the test after a while.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second): // a loaded CI machine (load average 75) took more than 10 s
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !api.IsCode(err, code) {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}
