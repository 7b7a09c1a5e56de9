package transport

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
)

func TestBodyDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := time.Second
	for _, tc := range []struct {
		name   string
		rules  bodyRules
		last   time.Duration // after t0
		n      int64
		server time.Time
		want   time.Time
	}{
		{"no rules, no server deadline", bodyRules{}, 0, 0, time.Time{}, time.Time{}},
		{"no rules keep the server's", bodyRules{}, 0, 0, at(30 * s), at(30 * s)},
		{"stall from the start", bodyRules{Stall: 10 * s}, 0, 0, at(30 * s), at(10 * s)},
		{"stall from the last byte", bodyRules{Stall: 10 * s}, 25 * s, 5, at(30 * s), at(30 * s)},
		{"never past the server's", bodyRules{Stall: 10 * s}, 28 * s, 5, at(30 * s), at(30 * s)},
		// 1 byte every 2 s: 5 bytes after 10 s buy 5 ms at 1024 B/s.
		{"a trickle fails the rate", bodyRules{Stall: 10 * s, MinRate: 1024}, 10 * s, 5, at(30 * s), at(10*s + 4882812*time.Nanosecond)},
		{"enough bytes, the stall decides", bodyRules{Stall: 10 * s, MinRate: 1024}, 3 * s, 1 << 20, at(30 * s), at(13 * s)},
		{"rate without a stall rule", bodyRules{MinRate: 1000}, 0, 2000, time.Time{}, at(2 * s)},
		{"huge counts do not overflow", bodyRules{Stall: s, MinRate: 1}, 0, 1 << 62, time.Time{}, at(s)},
	} {
		if got := tc.rules.deadline(t0, at(tc.last), tc.n, tc.server); !got.Equal(tc.want) {
			t.Errorf("%s: deadline = %v, want %v", tc.name, got.Sub(t0), tc.want.Sub(t0))
		}
	}
}

func TestSlowestUpload(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	s, ms := time.Second, time.Millisecond
	for _, tc := range []struct {
		name string
		ups  []uploadView
		want int
	}{
		{"none", nil, -1},
		{"only ones within the grace", []uploadView{{ago(150 * ms), 0}, {ago(100 * ms), 0}}, -1},
		{"the lowest rate", []uploadView{{ago(10 * s), 100 << 10}, {ago(10 * s), 5}, {ago(2 * s), 1 << 20}}, 1},
		// 5 bytes in 10 s (0.5 B/s) is slower than 1 byte in 1 s.
		{"rate, not bytes", []uploadView{{ago(1 * s), 1}, {ago(10 * s), 5}}, 1},
		{"a young trickle is spared while an old one may go", []uploadView{{ago(300 * ms), 0}, {ago(5 * s), 50 << 10}}, 1},
		{"ties go to the oldest", []uploadView{{ago(2 * s), 0}, {ago(9 * s), 0}, {ago(4 * s), 0}}, 1},
		{"a fast old upload is still chosen when alone", []uploadView{{ago(20 * s), 8 << 20}}, 0},
		// A churning trickle keeps every body under a second old; one must
		// still go, or every newcomer is refused.
		{"all young: the slowest past the grace", []uploadView{{ago(900 * ms), 200 << 10}, {ago(600 * ms), 1}, {ago(400 * ms), 1}}, 1},
		{"all young: one within the grace is spared", []uploadView{{ago(100 * ms), 0}, {ago(700 * ms), 1}}, 1},
		{"all young: ties go to the oldest", []uploadView{{ago(300 * ms), 0}, {ago(800 * ms), 0}, {ago(500 * ms), 0}}, 1},
		{"at the grace exactly it may go", []uploadView{{ago(200 * ms), 0}}, 0},
		{"at minQuiet exactly it is settled", []uploadView{{ago(s), 1 << 20}, {ago(500 * ms), 1}}, 0},
	} {
		if got := slowestUpload(tc.ups, now, time.Second, 200*time.Millisecond); got != tc.want {
			t.Errorf("%s: slowestUpload = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCallerSlots(t *testing.T) {
	type op struct {
		take bool // else give
		key  string
		want bool // of a take
	}
	take := func(k string, want bool) op { return op{true, k, want} }
	give := func(k string) op { return op{false, k, false} }
	for _, tc := range []struct {
		name string
		cap  int
		ops  []op
		left map[string]int
	}{
		{"under the cap", 2, []op{take("a", true), take("a", true)}, map[string]int{"a": 2}},
		{"the cap+1th is refused, others are not", 2, []op{take("a", true), take("a", true), take("a", false), take("b", true)}, map[string]int{"a": 2, "b": 1}},
		{"a refusal takes nothing; a give frees one", 1, []op{take("a", true), take("a", false), give("a"), take("a", true)}, map[string]int{"a": 1}},
		{"counts drop to nothing", 3, []op{take("a", true), give("a")}, map[string]int{}},
		{"no cap", 0, []op{take("a", true), take("a", true), take("a", true)}, map[string]int{"a": 3}},
	} {
		c := callerSlots{cap: tc.cap, n: map[string]int{}}
		for i, o := range tc.ops {
			if o.take {
				if got := c.take(o.key); got != o.want {
					t.Errorf("%s: op %d take(%s) = %v, want %v", tc.name, i, o.key, got, o.want)
				}
			} else {
				c.give(o.key)
			}
		}
		if fmt.Sprint(c.n) != fmt.Sprint(tc.left) {
			t.Errorf("%s: counts %v, want %v", tc.name, c.n, tc.left)
		}
	}
}

// serveWith serves h as NewHTTPServer does with l, minQuiet for the
// eviction choice.
func serveWith(t *testing.T, l ServeLimits, minQuiet time.Duration, h http.Handler) (string, *ConnLimiter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, cl := NewHTTPServer(h, ln, l, nil)
	cl.minQuiet = minQuiet
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), cl
}

// postHead opens a connection and sends the headers of a POST of length
// bytes to path, and the first bytes of its body.
func postHead(t *testing.T, addr, path string, length int, first string) net.Conn {
	t.Helper()
	c := dialFrom(t, "127.0.0.1", addr)
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: hub\r\nContent-Length: %d\r\n\r\n%s", path, length, first); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedAfter is how long the server took to close c with no answer
// (failing if it answered or kept c open past limit).
func closedAfter(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was kept open for %v", limit)
	}
	if len(b) > 0 {
		t.Fatalf("the server answered %q instead of closing", b)
	}
	return time.Since(start)
}

func readAllHandler(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "got %d", len(b))
}

// TestSlowBodiesAreCut: a body that stops, or trickles under the minimum
// rate, is cut (the connection closed) long before the read timeout; one
// that keeps the rate is read to its end though it takes longer than the
// stall; the read timeout still bounds a body that keeps the rules.
func TestSlowBodiesAreCut(t *testing.T) {
	l := ServeLimits{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, BodyStall: 300 * time.Millisecond, BodyMinRate: 1000}
	addr, cl := serveWith(t, l, time.Second, http.HandlerFunc(readAllHandler))

	stopped := postHead(t, addr, "/", 1000, "{")
	if d := closedAfter(t, stopped, 3*time.Second); d > 2*time.Second {
		t.Errorf("a stopped body was closed after %v, want about the stall (300 ms)", d)
	}

	trickle := postHead(t, addr, "/", 1000, "")
	done := make(chan time.Duration)
	go func() { done <- closedAfter(t, trickle, 3*time.Second) }()
	for i := 0; i < 20; i++ { // 10 B/s, under 1000 B/s
		if _, err := trickle.Write([]byte("x")); err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := <-done; d > 2*time.Second {
		t.Errorf("a trickle was closed after %v, want about the stall", d)
	}
	if st := cl.Stats(); st.SlowBodies != 2 {
		t.Errorf("stats %+v, want 2 bodies too slow", st)
	}

	// 2,000 bytes in 200-byte pieces every 100 ms (2,000 B/s): 1 s, more
	// than three stalls, and served.
	steady := postHead(t, addr, "/", 2000, "")
	for i := 0; i < 10; i++ {
		if _, err := steady.Write([]byte(strings.Repeat("y", 200))); err != nil {
			t.Fatalf("a steady body was cut after %d pieces: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = steady.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(steady), nil)
	if err != nil {
		t.Fatalf("a steady body got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "got 2000" {
		t.Fatalf("a steady body: %d %q", resp.StatusCode, b)
	}

	// The read timeout (here 800 ms) still ends a body that keeps the rules.
	l.ReadTimeout = 800 * time.Millisecond
	addr2, cl2 := serveWith(t, l, time.Second, http.HandlerFunc(readAllHandler))
	long := postHead(t, addr2, "/", 1<<20, "")
	start := time.Now()
	go func() {
		for time.Since(start) < 3*time.Second {
			if _, err := long.Write([]byte(strings.Repeat("z", 500))); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	_ = long.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, _ = io.Copy(io.Discard, long) // the 400 of the handler, then close
	if d := time.Since(start); d > 2*time.Second || d < 700*time.Millisecond {
		t.Errorf("a body keeping the rules was ended after %v, want the read timeout (800 ms)", d)
	}
	if st := cl2.Stats(); st.SlowBodies != 0 {
		t.Errorf("the read timeout counted as a slow body: %+v", st)
	}
}

// TestGlobalCapClosesSlowestUpload: at the global cap with no quiet
// connection, a new connection gets in by closing the slowest body in
// flight, then the next slowest; a handler at work (one that has read
// its whole body, or had none) and a hijacked connection are never
// closed, so with only those left a new connection is refused.
func TestGlobalCapClosesSlowestUpload(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy": // reads its body, then works
			_, _ = io.ReadAll(r.Body)
			entered <- r.URL.Path
			<-release
		case "/hijack":
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			entered <- r.URL.Path
			<-release
			c.Close()
			return
		case "/upload":
			entered <- r.URL.Path
			_, _ = io.ReadAll(r.Body)
		}
		_, _ = io.WriteString(w, "ok")
	})
	addr, cl := serveWith(t, ServeLimits{MaxConns: 4, ReadTimeout: 30 * time.Second}, 200*time.Millisecond, h)
	defer close(release)
	waitEntered := func(want string) {
		t.Helper()
		select {
		case got := <-entered:
			if got != want {
				t.Fatalf("handler %s entered, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("handler %s never entered", want)
		}
	}
	slow := postHead(t, addr, "/upload", 1000, "x") // 1 byte
	waitEntered("/upload")
	faster := postHead(t, addr, "/upload", 100000, strings.Repeat("x", 20000)) // 20 kB
	waitEntered("/upload")
	busy := postHead(t, addr, "/busy", 5, "hello")
	waitEntered("/busy")
	hj := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(hj, "GET /hijack HTTP/1.1\r\nHost: hub\r\n\r\n")
	waitEntered("/hijack")
	waitOpen(t, cl, 4)
	time.Sleep(300 * time.Millisecond) // the uploads are past minQuiet

	// The first newcomer closes the 1-byte upload, the second the 20 kB one.
	for i, victim := range []net.Conn{slow, faster} {
		c := dialFrom(t, "127.0.0.1", addr)
		fmt.Fprintf(c, "GET /busy HTTP/1.1\r\nHost: hub\r\n\r\n")
		waitEntered("/busy")
		closedAfter(t, victim, 3*time.Second)
		if st := cl.Stats(); st.EvictedUploads != int64(i+1) {
			t.Fatalf("after newcomer %d: stats %+v, want %d uploads closed", i+1, st, i+1)
		}
	}
	// Left: three handlers at work and a hijacked connection.
	status, body := get(t, dialFrom(t, "127.0.0.1", addr))
	if status != http.StatusTooManyRequests || !strings.Contains(body, "connection limit") {
		t.Fatalf("with only busy connections left a new one got %d %q, want 429", status, body)
	}
	for _, c := range []net.Conn{busy, hj} {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == nil || !isTimeout(err) {
			t.Fatalf("a busy or hijacked connection was closed: %v", err)
		}
	}
	wait.Eventually(t, time.Second, wait.Interval, func() error {
		if st := cl.Stats(); st.Evicted != 2 || st.RefusedTotal != 1 {
			return fmt.Errorf("stats %+v, want 2 closed to make room, 1 refused", st)
		}
		return nil
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestGlobalCapClosesYoungUploads: when every body in flight is younger
// than minQuiet (a caller reopening its trickles as fast as the Hub
// closes them), a newcomer still gets in by closing the slowest one past
// the upload grace; only while every body is within the grace is it
// refused. The limiter's clock is the test's, so no age depends on the
// machine's load.
func TestGlobalCapClosesYoungUploads(t *testing.T) {
	entered := make(chan struct{}, 10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upload" {
			entered <- struct{}{}
			_, _ = io.ReadAll(r.Body)
		}
		_, _ = io.WriteString(w, "ok")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, cl := NewHTTPServer(h, ln, ServeLimits{MaxConns: 2, ReadTimeout: 30 * time.Second}, nil)
	var clock atomic.Int64 // nanoseconds after t0
	t0 := time.Now()
	cl.now = func() time.Time { return t0.Add(time.Duration(clock.Load())) }
	cl.minQuiet, cl.uploadGrace = time.Hour, 200*time.Millisecond
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()

	slow := postHead(t, addr, "/upload", 1000, "x")
	<-entered
	faster := postHead(t, addr, "/upload", 100000, strings.Repeat("x", 20000))
	<-entered
	waitOpen(t, cl, 2)
	// Both bodies began at t0: within the grace nobody may be closed.
	if status, body := get(t, dialFrom(t, "127.0.0.2", addr)); status != http.StatusTooManyRequests {
		t.Fatalf("with both bodies within the grace a newcomer got %d %q, want 429", status, body)
	}
	// Let the handlers count what they read before the rates are compared.
	wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		for _, u := range cl.uploads {
			if u.bytes.Load() == 0 {
				return fmt.Errorf("a body has no byte counted yet")
			}
		}
		return nil
	})
	clock.Store(int64(500 * time.Millisecond)) // past the grace, far under minQuiet
	if status, body := get(t, dialFrom(t, "127.0.0.2", addr)); status != http.StatusOK {
		t.Fatalf("with both bodies past the grace a newcomer got %d %q, want 200", status, body)
	}
	closedAfter(t, slow, 3*time.Second)
	_ = faster.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := faster.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("the faster body was closed, not the slowest: %v", err)
	}
	if st := cl.Stats(); st.EvictedUploads != 1 || st.RefusedTotal != 1 {
		t.Fatalf("stats %+v, want 1 upload closed to make room and 1 refused", st)
	}
}
