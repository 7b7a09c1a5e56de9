package transport

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
)

func TestAdmitConn(t *testing.T) {
	for _, tc := range []struct {
		addrOpen, open, perAddr, total int
		want                           connVerdict
	}{
		{0, 0, 0, 0, connAdmit},       // no caps
		{1000, 1000, 0, 0, connAdmit}, // no caps, many open
		{2, 5, 3, 10, connAdmit},      // under both
		{3, 5, 3, 10, connAddrFull},   // the N+1th from one address
		{0, 10, 3, 10, connTotalFull}, // a new address at the global cap
		{3, 10, 3, 10, connAddrFull},  // both: the address is refused, nothing is closed for it
		{5, 9, 0, 10, connAdmit},      // no per-address cap
		{9, 9, 10, 0, connAdmit},      // no global cap
		{10, 10, 10, 0, connAddrFull}, // no global cap, address full
		{0, 10000, 256, 8192, connTotalFull},
	} {
		if got := admitConn(tc.addrOpen, tc.open, tc.perAddr, tc.total); got != tc.want {
			t.Errorf("admitConn(%d, %d, %d, %d) = %v, want %v", tc.addrOpen, tc.open, tc.perAddr, tc.total, got, tc.want)
		}
	}
}

func TestMaxConnsForFDLimit(t *testing.T) {
	for _, tc := range []struct {
		want   int
		nofile uint64
		got    int
	}{
		{8192, 0, 8192},          // unknown limit
		{8192, 1 << 20, 8192},    // plenty
		{8192, 1024, 1024 - 128}, // the classic soft limit
		{8192, 8192 + 128, 8192}, // exactly fits
		{8192, 8192 + 127, 8191}, // one short
		{8192, 100, 1},           // a limit below the reserve still accepts one
		{0, 20000, 20000 - 128},  // no wish: all that fits
	} {
		if got := MaxConnsForFDLimit(tc.want, tc.nofile); got != tc.got {
			t.Errorf("MaxConnsForFDLimit(%d, %d) = %d, want %d", tc.want, tc.nofile, got, tc.got)
		}
	}
}

// serveLimited serves handler on a loopback listener behind a
// ConnLimiter with the given caps and returns the listener's address.
func serveLimited(t *testing.T, perAddr, total int, minQuiet time.Duration, h http.Handler) (string, *ConnLimiter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, cl := NewHTTPServer(h, ln, ServeLimits{MaxConnsPerAddr: perAddr, MaxConns: total, ReadHeaderTimeout: 10 * time.Second}, nil)
	cl.minQuiet = minQuiet
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), cl
}

// dialFrom opens a connection to addr from the loopback address src (on
// Linux all of 127.0.0.0/8 is loopback, so each is a distinct client).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends GET /x on c and returns the response status line and body.
func get(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: hub\r\n\r\n"); err != nil {
		return 0, "write: " + err.Error()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "read: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitOpen waits until the limiter counts n open connections (Accept
// runs in the server's goroutine).
func waitOpen(t *testing.T, cl *ConnLimiter, n int) {
	t.Helper()
	wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
		if open := cl.Stats().Open; open != n {
			return fmt.Errorf("open connections = %d, want %d", open, n)
		}
		return nil
	})
}

func TestConnLimiterPerAddress(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	addr, cl := serveLimited(t, 3, 0, time.Hour, ok)
	held := []net.Conn{dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr)}
	waitOpen(t, cl, 3)

	// The 4th from the same address is answered 429 and closed.
	status, body := get(t, dialFrom(t, "127.0.0.2", addr))
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"code":"rate_limited"`) || !strings.Contains(body, "from this address") {
		t.Fatalf("4th connection from one address: %d %q, want 429 rate_limited", status, body)
	}
	if st := cl.Stats(); st.RefusedPerAddr != 1 || st.Open != 3 {
		t.Fatalf("stats %+v, want 1 refused and 3 open", st)
	}
	// Another address is not affected, and the held ones work.
	if status, body := get(t, dialFrom(t, "127.0.0.3", addr)); status != http.StatusOK {
		t.Fatalf("another address: %d %q", status, body)
	}
	if status, body := get(t, held[0]); status != http.StatusOK {
		t.Fatalf("a held connection: %d %q", status, body)
	}
	// Closing one frees its slot.
	held[1].Close()
	waitOpen(t, cl, 3) // two from .2 and the keep-alive from .3
	if status, body := get(t, dialFrom(t, "127.0.0.2", addr)); status != http.StatusOK {
		t.Fatalf("after one closed: %d %q", status, body)
	}
}

func TestConnLimiterGlobalCapClosesQuietNotBusy(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	addr, cl := serveLimited(t, 0, 2, 0, h)
	defer close(release)

	// Two quiet connections (no request yet) fill the cap; a third client
	// gets in by closing the oldest of them.
	first := dialFrom(t, "127.0.0.2", addr)
	waitOpen(t, cl, 1)
	dialFrom(t, "127.0.0.3", addr)
	waitOpen(t, cl, 2)
	if status, body := get(t, dialFrom(t, "127.0.0.4", addr)); status != http.StatusOK {
		t.Fatalf("at the cap with quiet connections: %d %q, want 200", status, body)
	}
	_ = first.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := first.Read(make([]byte, 1)); err == nil {
		t.Fatal("the oldest quiet connection was not closed to make room")
	}
	if st := cl.Stats(); st.Evicted != 1 || st.Open != 2 {
		t.Fatalf("stats %+v, want 1 closed to make room and 2 open", st)
	}
	// The client has its answer before the server marks the connection
	// idle (http.Server's ConnState after the flush): wait until both
	// open connections are quiet again.
	wait.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		if n := cl.quiet.Len(); n != 2 {
			return fmt.Errorf("%d quiet connections, want 2", n)
		}
		return nil
	})

	// Two connections inside a request take the two slots (closing the
	// quiet ones); they are never closed to make room: a third client is
	// refused instead.
	for _, src := range []string{"127.0.0.5", "127.0.0.6"} {
		c := dialFrom(t, src, addr)
		fmt.Fprintf(c, "GET /busy HTTP/1.1\r\nHost: hub\r\n\r\n")
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("the request from %s never reached the handler", src)
		}
	}
	status, body := get(t, dialFrom(t, "127.0.0.7", addr))
	if status != http.StatusTooManyRequests || !strings.Contains(body, "connection limit") {
		t.Fatalf("with every slot busy a new connection got %d %q, want 429 at the connection limit", status, body)
	}
	if st := cl.Stats(); st.RefusedTotal != 1 || st.Open != 2 {
		t.Fatalf("stats %+v, want 1 refused at the cap and 2 open", st)
	}
}
