package transport

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestIPLimiterFailures: blocked takes nothing; each failure takes a
// token; once the burst is spent the address is blocked until a token
// refills, and other addresses are not.
func TestIPLimiterFailures(t *testing.T) {
	l := NewIPLimiter(60, 3) // one a second, bursts of three
	now := time.Unix(1000, 0)
	for i := 0; i < 10; i++ {
		if b, _ := l.Blocked("a", now); b {
			t.Fatal("blocked before any failure (blocked must not take tokens)")
		}
	}
	for i := 0; i < 3; i++ {
		l.Fail("a", now)
	}
	b, wait := l.Blocked("a", now)
	if !b || wait <= 0 || wait > time.Second {
		t.Fatalf("after the burst of failures: blocked=%v wait=%v, want blocked for up to 1s", b, wait)
	}
	if b, _ := l.Blocked("b", now); b {
		t.Fatal("another address is blocked")
	}
	if b, _ := l.Blocked("a", now.Add(time.Second)); b {
		t.Fatal("still blocked after a token refilled")
	}
}

func TestClientIPKeys(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"127.0.0.2:5000", "127.0.0.2"},
		{"[::ffff:10.0.0.1]:80", "10.0.0.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"}, // same /64, same key
		{"[2001:db8:1:3::1]:443", "2001:db8:1:3::/64"},
		{"pipe", "pipe"},
	} {
		r := &http.Request{RemoteAddr: tc.remote}
		if got := ClientIP(r); got != tc.want {
			t.Errorf("ClientIP(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
	if got := addrKey(net.ParseIP("192.0.2.7"), ""); got != "192.0.2.7" {
		t.Errorf("addrKey = %q", got)
	}
}

func TestIPLimiter(t *testing.T) {
	l := NewIPLimiter(60, 3) // one a second, bursts of three
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := l.Allow("a", now); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, wait := l.Allow("a", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("over the burst: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := l.Allow("b", now); !ok {
		t.Fatal("another address shares the bucket")
	}
	if ok, _ := l.Allow("a", now.Add(time.Second)); !ok {
		t.Fatal("no refill after a second")
	}
	// The map stays bounded.
	for i := 0; i < maxBuckets+10; i++ {
		l.Allow(fmt.Sprint("ip", i), now.Add(time.Duration(i)*time.Millisecond))
	}
	if len(l.buckets) > maxBuckets {
		t.Fatalf("%d buckets kept", len(l.buckets))
	}
}
