package wire

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("s3cret-broker-key")

func signed(now time.Time) http.Header {
	h := http.Header{}
	SignHeaders(h, "b1", testSecret, "POST", "/api/v1/brokers/b1/ws", now)
	return h
}

func TestSignVerify(t *testing.T) {
	now := time.Unix(1700000000, 0)
	c := NewNonceCache(time.Minute, 100)
	h := signed(now)
	if len(h.Get(HeaderNonce)) != 32 || len(h.Get(HeaderSignature)) != 64 {
		t.Fatalf("headers %v", h)
	}
	if err := c.Verify("b1", testSecret, "POST", "/api/v1/brokers/b1/ws", h, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Replay of the very same headers.
	if err := c.Verify("b1", testSecret, "POST", "/api/v1/brokers/b1/ws", h, now.Add(31*time.Second)); !errors.Is(err, ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
	// Sign is the documented HMAC (vector computed independently).
	if got := Sign([]byte("k"), "GET", "/p", time.Unix(1, 0), "n"); got != "27f1717eec5a2cf71b987b1869570139d2eecfc9112cd609e6f145337bb2e81a" {
		t.Fatalf("Sign: %q", got)
	}
}

func TestVerifyRejects(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for name, tc := range map[string]struct {
		mutate func(h http.Header)
		secret []byte
		method string
		path   string
		at     time.Time
		want   error
	}{
		"wrong secret":    {secret: []byte("other"), want: ErrBadSignature},
		"wrong method":    {method: "GET", want: ErrBadSignature},
		"wrong path":      {path: "/api/v1/brokers/b2/ws", want: ErrBadSignature},
		"other broker":    {mutate: func(h http.Header) { h.Set(HeaderBrokerID, "b2") }, want: ErrBadSignature},
		"tampered ts":     {mutate: func(h http.Header) { h.Set(HeaderTimestamp, fmt.Sprint(now.Unix()+1)) }, want: ErrBadSignature},
		"bad ts":          {mutate: func(h http.Header) { h.Set(HeaderTimestamp, "soon") }, want: ErrBadSignature},
		"no signature":    {mutate: func(h http.Header) { h.Del(HeaderSignature) }, want: ErrBadSignature},
		"not hex":         {mutate: func(h http.Header) { h.Set(HeaderSignature, "zz") }, want: ErrBadSignature},
		"long nonce":      {mutate: func(h http.Header) { h.Set(HeaderNonce, strings.Repeat("a", 200)) }, want: ErrBadSignature},
		"too old":         {at: now.Add(61 * time.Second), want: ErrStale},
		"from the future": {at: now.Add(-61 * time.Second), want: ErrStale},
	} {
		t.Run(name, func(t *testing.T) {
			h := signed(now)
			if tc.mutate != nil {
				tc.mutate(h)
			}
			secret, method, path, at := testSecret, "POST", "/api/v1/brokers/b1/ws", now
			if tc.secret != nil {
				secret = tc.secret
			}
			if tc.method != "" {
				method = tc.method
			}
			if tc.path != "" {
				path = tc.path
			}
			if !tc.at.IsZero() {
				at = tc.at
			}
			err := NewNonceCache(time.Minute, 10).Verify("b1", secret, method, path, h, at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
			for _, s := range [][]byte{testSecret, secret} {
				if strings.Contains(err.Error(), string(s)) {
					t.Fatalf("error leaks the secret: %v", err)
				}
			}
		})
	}
}

func TestNonceCacheBounded(t *testing.T) {
	now := time.Unix(1700000000, 0)
	c := NewNonceCache(time.Minute, 3)
	verify := func(at time.Time) error {
		return c.Verify("b1", testSecret, "POST", "/p", func() http.Header {
			h := http.Header{}
			SignHeaders(h, "b1", testSecret, "POST", "/p", at)
			return h
		}(), at)
	}
	for i := 0; i < 3; i++ {
		if err := verify(now); err != nil {
			t.Fatal(err)
		}
	}
	// Full of live nonces: refuse rather than grow.
	if err := verify(now); !errors.Is(err, ErrNonceCacheFull) {
		t.Fatalf("want ErrNonceCacheFull, got %v", err)
	}
	// Once they expire they are evicted and room comes back.
	later := now.Add(time.Minute + time.Second)
	if err := verify(later); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	n := len(c.seen)
	c.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d nonces kept after expiry, want 1", n)
	}
}

func TestNonceCacheConcurrent(t *testing.T) {
	now := time.Unix(1700000000, 0)
	c := NewNonceCache(time.Minute, 10000)
	h := signed(now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				// The same headers from many goroutines: exactly one wins.
				if c.Verify("b1", testSecret, "POST", "/api/v1/brokers/b1/ws", h, now) == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
				if err := c.Verify("b1", testSecret, "POST", "/api/v1/brokers/b1/ws", signed(now), now); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("replayed headers accepted %d times", ok)
	}
}
