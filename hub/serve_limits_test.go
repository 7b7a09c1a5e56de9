package hub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/identity"
	"github.com/scion-go/scion/hub/transport"
	"github.com/scion-go/scion/internal/fakeclock"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
)

// shortLimits are timeouts small enough to watch, with the caps off.
var shortLimits = transport.ServeLimits{
	ReadHeaderTimeout: 300 * time.Millisecond,
	ReadTimeout:       600 * time.Millisecond,
	WriteTimeout:      400 * time.Millisecond,
	IdleTimeout:       400 * time.Millisecond,
}

// hubAddr is host:port of the env's Hub.
func hubAddr(t *testing.T, e *testenv.Env) string {
	u, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// closedWithin reports how long the Hub took to close c (reading and
// dropping whatever it sends), failing after limit.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the Hub kept the connection open for %v", limit)
	}
	return time.Since(start)
}

// TestServeTimeoutsCloseSlowAndIdleClients: slow headers, a slow body and
// an idle keep-alive connection are each closed by their timeout, as
// `scion server start` serves (transport.NewHTTPServer).
func TestServeTimeoutsCloseSlowAndIdleClients(t *testing.T) {
	limits := shortLimits
	e := testenv.New(t, testenv.Options{Serve: &limits})
	addr := hubAddr(t, e)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	slowHeaders := dial()
	fmt.Fprintf(slowHeaders, "GET /healthz HTTP/1.1\r\nHost: hub\r\n")
	t.Logf("slow headers closed after %v", closedWithin(t, slowHeaders, 5*time.Second))

	slowBody := dial()
	fmt.Fprintf(slowBody, "POST /api/v1/runtime-brokers/join HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	t.Logf("slow body closed after %v", closedWithin(t, slowBody, 5*time.Second))

	idle := dial()
	fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n")
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	start := time.Now()
	_ = idle.SetReadDeadline(start.Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the Hub sent bytes on an idle connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an idle keep-alive connection was never closed")
	}
	t.Logf("idle keep-alive closed after %v", time.Since(start))
}

// TestStreamOutlivesWriteTimeout: `logs -f` keeps delivering lines long
// after the server's WriteTimeout, which would otherwise cut it.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	limits := shortLimits
	e := testenv.New(t, testenv.Options{Brokers: 1, Serve: &limits})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "talker", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	rt := e.Brokers()[0].Runtime
	rc, err := e.Admin.Logs(ctx, "talker", "default", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	lines := bufio.NewReader(rc)
	start := time.Now()
	for i := 0; i < 4; i++ {
		want := fmt.Sprintf("line %d", i)
		if err := rt.WriteLog(a.ID, want+"\n"); err != nil {
			t.Fatal(err)
		}
		for {
			got, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("after %v (write timeout %v) the stream ended: %v", time.Since(start), limits.WriteTimeout, err)
			}
			if strings.TrimSpace(got) == want {
				break
			}
		}
		time.Sleep(limits.WriteTimeout / 2)
	}
	if d := time.Since(start); d < 2*limits.WriteTimeout {
		t.Fatalf("the stream only ran %v, not past twice the write timeout", d)
	}
}

// postFrom sends a JSON POST from the loopback address src.
func postFrom(t *testing.T, src, u, token, body string) *http.Response {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func getFrom(t *testing.T, src, u, token string) *http.Response {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rateLimited checks a 429 with Retry-After and the standard error body.
func rateLimited(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	defer resp.Body.Close()
	var body api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusTooManyRequests || body.Error == nil || body.Error.Code != api.CodeRateLimited {
		t.Fatalf("%s: %d %+v, want 429 rate_limited", what, resp.StatusCode, body.Error)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 1 || secs > 60 {
		t.Fatalf("%s: Retry-After %q, want whole seconds", what, resp.Header.Get("Retry-After"))
	}
	if got, _ := body.Error.Details["retryAfter"].(float64); int(got) != secs {
		t.Fatalf("%s: details.retryAfter %v, want %d", what, body.Error.Details["retryAfter"], secs)
	}
}

// TestJoinRateLimited: bad join tokens from one address are answered 401
// until the address's join budget is spent, then 429 with Retry-After;
// another address still gets its 401s.
func TestJoinRateLimited(t *testing.T) {
	rl := identity.DefaultRateLimits()
	e := testenv.New(t, testenv.Options{RateLimits: &rl})
	join := e.URL + "/api/v1/runtime-brokers/join"
	body := `{"name":"intruder","joinToken":"scj_guess"}`
	var statuses []int
	for i := 0; i < 30; i++ {
		resp := postFrom(t, "127.0.0.2", join, "", body)
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			rateLimited(t, resp, "join")
			break
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad join token %d: %d, want 401", i, resp.StatusCode)
		}
	}
	if last := statuses[len(statuses)-1]; last != http.StatusTooManyRequests || len(statuses) > 11 {
		t.Fatalf("join statuses %v: want 429 after at most 10 attempts", statuses)
	}
	if resp := postFrom(t, "127.0.0.3", join, "", body); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another address: %d, want 401", resp.StatusCode)
	}
}

// TestFailedAuthenticationsRateLimited: after its burst of bad tokens an
// address is answered 429 before its credential is looked at, even a
// good one; other addresses are served.
func TestFailedAuthenticationsRateLimited(t *testing.T) {
	rl := identity.DefaultRateLimits()
	e := testenv.New(t, testenv.Options{RateLimits: &rl})
	projects := e.URL + "/api/v1/projects"
	n := 0
	for ; n < 100; n++ {
		resp := getFrom(t, "127.0.0.2", projects, "scu_guess"+strconv.Itoa(n))
		if resp.StatusCode == http.StatusTooManyRequests {
			rateLimited(t, resp, "bad tokens")
			break
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d, want 401", n, resp.StatusCode)
		}
	}
	if n < 10 || n >= 100 {
		t.Fatalf("429 after %d bad tokens, want a burst of at least 10 and then a limit", n)
	}
	rateLimited(t, getFrom(t, "127.0.0.2", projects, e.AdminToken), "a good token from the blocked address")
	if resp := getFrom(t, "127.0.0.3", projects, e.AdminToken); resp.StatusCode != http.StatusOK {
		t.Fatalf("the admin from another address: %d, want 200", resp.StatusCode)
	}
	// Requests with no credential guess nothing and do not count.
	for i := 0; i < 50; i++ {
		resp := getFrom(t, "127.0.0.4", projects, "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous request %d: %d, want 401", i, resp.StatusCode)
		}
	}
	if resp := getFrom(t, "127.0.0.4", projects, "scu_guess"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a first bad token after anonymous requests: %d, want 401", resp.StatusCode)
	}
}

// TestRateLimitedSlowBodyClosedAtOnce: once an address is over its join
// limit, a slow body to the join route is answered 429 and its
// connection closed at once, not held until the read timeout.
func TestRateLimitedSlowBodyClosedAtOnce(t *testing.T) {
	rl := identity.DefaultRateLimits()
	limits := shortLimits
	limits.ReadTimeout = 10 * time.Second
	e := testenv.New(t, testenv.Options{RateLimits: &rl, Serve: &limits})
	join := e.URL + "/api/v1/runtime-brokers/join"
	for i := 0; ; i++ {
		resp := postFrom(t, "127.0.0.2", join, "", `{"name":"x","joinToken":"scj_guess"}`)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if i > 20 {
			t.Fatal("no 429 after 20 joins")
		}
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	c, err := d.Dial("tcp", hubAddr(t, e))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/v1/runtime-brokers/join HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to the slow body: %v", err)
	}
	rateLimited(t, resp, "slow body over the join limit")
	if took := closedWithin(t, c, 5*time.Second); took > 2*time.Second {
		t.Fatalf("the refused connection was closed after %v, want at once (read timeout %v)", took, limits.ReadTimeout)
	}
}

// TestConnectRateLimited: control-channel upgrade attempts from one
// address are limited (a request with no credential is 401 and is not a
// failed authentication, so only the connect limit answers 429).
func TestConnectRateLimited(t *testing.T) {
	rl := identity.DefaultRateLimits()
	clock := fakeclock.New(time.Now())
	e := testenv.New(t, testenv.Options{RateLimits: &rl, Now: clock.Now})
	connect := e.URL + "/api/v1/runtime-brokers/connect"
	attempt := func() int {
		resp := getFrom(t, "127.0.0.2", connect, "")
		if resp.StatusCode == http.StatusTooManyRequests {
			rateLimited(t, resp, "connect")
		} else {
			resp.Body.Close()
		}
		return resp.StatusCode
	}
	// The Hub's clock stands still: no token refills while the loop runs.
	n := 0
	for ; n < 200; n++ {
		st := attempt()
		if st == http.StatusTooManyRequests {
			break
		}
		if st != http.StatusUnauthorized {
			t.Fatalf("connect %d without credentials: %d, want 401", n, st)
		}
	}
	if n != rl.Connect.Burst {
		t.Fatalf("429 after %d connect attempts, want after the burst of %d", n, rl.Connect.Burst)
	}
	// One refill period later, one more attempt is let through, and only one.
	refill := time.Minute / time.Duration(rl.Connect.PerMinute)
	clock.Advance(refill - time.Millisecond)
	if st := attempt(); st != http.StatusTooManyRequests {
		t.Fatalf("%v after the burst (refill every %v): %d, want 429", refill-time.Millisecond, refill, st)
	}
	clock.Advance(time.Millisecond)
	if st := attempt(); st != http.StatusUnauthorized {
		t.Fatalf("a refill period (%v) after the burst: %d, want 401", refill, st)
	}
	if st := attempt(); st != http.StatusTooManyRequests {
		t.Fatalf("a second attempt on one refilled token: %d, want 429", st)
	}
}

// TestControlChannelOutlivesTimeouts: a broker's control channel (a
// hijacked WebSocket) is not cut by the server's read, write or idle
// timeouts: one channel, opened once, stays up for many times each.
func TestControlChannelOutlivesTimeouts(t *testing.T) {
	limits := shortLimits
	var logs syncBuffer
	e := testenv.New(t, testenv.Options{Brokers: 1, Serve: &limits, LogTo: &logs})
	wait.Consistently(t, 5*limits.ReadTimeout, wait.Interval, func() error {
		if n := strings.Count(logs.String(), "broker channel opened"); n != 1 {
			return fmt.Errorf("the broker's channel was opened %d times (read timeout %v), want once", n, limits.ReadTimeout)
		}
		return nil
	})
	if _, err := e.Admin.GetBroker(context.Background(), e.Brokers()[0].ID); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, time.Second, wait.Interval, func() error {
		b, err := e.Admin.GetBroker(context.Background(), e.Brokers()[0].ID)
		if err == nil && b.Status != api.BrokerOnline {
			err = fmt.Errorf("broker is %s", b.Status)
		}
		return err
	})
}

// TestPerAddressCapServedAndCounted: a Hub served as `scion server start`
// does refuses the N+1th connection from one address with 429 and the
// standard error body, serves another address, and counts the refusal in
// /metrics.
func TestPerAddressCapServedAndCounted(t *testing.T) {
	limits := shortLimits
	limits.ReadHeaderTimeout, limits.IdleTimeout = 10*time.Second, 10*time.Second
	limits.MaxConnsPerAddr = 2
	e := testenv.New(t, testenv.Options{Serve: &limits})
	addr := hubAddr(t, e)
	dial := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial("127.0.0.2")
	dial("127.0.0.2")
	// The server accepts in its own goroutine: the two may not be counted
	// yet, so retry the third until it is refused.
	wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
		c := dial("127.0.0.2")
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != http.StatusTooManyRequests || body.Error == nil || body.Error.Code != api.CodeRateLimited {
			return fmt.Errorf("the 3rd connection from one address: %d %+v, want 429 rate_limited", resp.StatusCode, body.Error)
		}
		return nil
	})
	resp := getFrom(t, "127.0.0.3", e.URL+"/metrics", e.AdminToken)
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(m), "scion_connections_refused_per_address_total ") ||
		strings.Contains(string(m), "scion_connections_refused_per_address_total 0\n") {
		t.Fatalf("metrics from another address: %d, refusal not counted:\n%s", resp.StatusCode, m)
	}
	if !strings.Contains(string(m), "scion_connections_open ") {
		t.Fatal("no scion_connections_open in /metrics")
	}
}
