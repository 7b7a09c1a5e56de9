package hub_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/transport"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
)

// TestBusyConnectionsCappedPerCaller: a signed-in caller holding its cap
// of requests in progress (here slow bodies) gets 429 rate_limited for
// the next one, with or without a body, from any address; another user is
// served; when one of the held requests ends the caller is served again.
func TestBusyConnectionsCappedPerCaller(t *testing.T) {
	limits := transport.ServeLimits{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		IdleTimeout: 10 * time.Second, BodyStall: 10 * time.Second, MaxConnsPerCaller: 2}
	e := testenv.New(t, testenv.Options{Serve: &limits})
	bob := e.UserToken(t, "bob", api.RoleMember)
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
	hold := func(src string) net.Conn {
		c := dial(src)
		fmt.Fprintf(c, "POST /api/v1/projects HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", e.AdminToken)
		return c
	}
	held := []net.Conn{hold("127.0.0.2"), hold("127.0.0.3")}

	// The held requests are counted once their handlers run: retry until
	// the third is refused.
	wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
		resp := getFrom(t, "127.0.0.4", e.URL+"/api/v1/auth/whoami", e.AdminToken)
		defer resp.Body.Close()
		var body api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != http.StatusTooManyRequests || body.Error == nil || body.Error.Code != api.CodeRateLimited ||
			!strings.Contains(body.Error.Message, "for this caller") || resp.Header.Get("Retry-After") == "" {
			return fmt.Errorf("a third request of the caller: %d %+v, want 429 rate_limited for this caller", resp.StatusCode, body.Error)
		}
		return nil
	})
	// A third body is refused before it is read, and its connection closed.
	c := hold("127.0.0.5")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || !resp.Close {
		t.Fatalf("a third body of the caller: %v %v, want 429 and Connection: close", resp, err)
	}
	resp.Body.Close()

	if resp := getFrom(t, "127.0.0.4", e.URL+"/api/v1/auth/whoami", bob); resp.StatusCode != http.StatusOK {
		t.Fatalf("another user while the admin holds its cap: %d, want 200", resp.StatusCode)
	}
	held[0].Close()
	wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
		resp := getFrom(t, "127.0.0.4", e.URL+"/api/v1/auth/whoami", e.AdminToken)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("after one held request ended: %d, want 200", resp.StatusCode)
		}
		return nil
	})
}
