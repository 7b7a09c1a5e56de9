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

var connectReq = SignedRequest{Method: "GET", Path: "/api/v1/brokers/b1/ws"}

func signed(now time.Time) http.Header {
	h := http.Header{}
	SignHeaders(h, "b1", testSecret, connectReq, now)
	return h
}

func TestSignVerify(t *testing.T) {
	now := time.Unix(1700000000, 0)
	c := NewNonceCache(time.Minute, 100)
	h := signed(now)
	if len(h.Get(HeaderNonce)) != 32 || len(h.Get(HeaderSignature)) != 64 || h.Get(HeaderSignatureVersion) != "2" {
		t.Fatalf("headers %v", h)
	}
	if err := c.Verify("b1", testSecret, connectReq, h, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Replay of the very same headers.
	if err := c.Verify("b1", testSecret, connectReq, h, now.Add(31*time.Second)); !errors.Is(err, ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
	// Sign is the documented HMAC (vectors computed independently, with
	// Python's hmac over the joined fields).
	for _, v := range []struct {
		r    SignedRequest
		want string
	}{
		{SignedRequest{Method: "GET", Path: "/p", RawQuery: "q=1"}, "d24982b2ef4c97a519a941a592b70969e2e715e0c781bbd593149031e3e695c7"},
		{SignedRequest{Method: "POST", Path: "/p", Body: []byte("{}")}, "c1a8f252c7ab0a8f61c8d8cfc6d169a73bf2eefff6c86396484cb2536e747420"},
	} {
		if got := Sign([]byte("k"), "b", v.r, time.Unix(1, 0), "n"); got != v.want {
			t.Fatalf("Sign(%+v) = %q, want %q", v.r, got, v.want)
		}
	}
}

// TestVerifyNonce: VerifySignature is pure; the nonce it returns is kept
// until the timestamp leaves the window.
func TestVerifyNonce(t *testing.T) {
	now := time.Unix(1700000000, 0)
	h := signed(now)
	for range 2 { // no state: the caller records the nonce
		n, err := VerifySignature("b1", testSecret, connectReq, h, now.Add(10*time.Second), time.Minute)
		if err != nil || n.Value != h.Get(HeaderNonce) || !n.ForgetAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("nonce %+v, %v", n, err)
		}
	}
}

// TestVerifyRejects: every part of the request the signature covers, and
// the headers, invalidate it when changed; the errors never carry the
// secret.
func TestVerifyRejects(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"name":"b1"}`)
	for name, tc := range map[string]struct {
		signReq SignedRequest // default connectReq
		mutate  func(h http.Header)
		secret  []byte
		req     *SignedRequest // what the server saw; default the signed one
		at      time.Time
		want    error
	}{
		"wrong secret":     {secret: []byte("other"), want: ErrBadSignature},
		"wrong method":     {req: &SignedRequest{Method: "POST", Path: connectReq.Path}, want: ErrBadSignature},
		"wrong path":       {req: &SignedRequest{Method: "GET", Path: "/api/v1/brokers/b2/ws"}, want: ErrBadSignature},
		"query added":      {req: &SignedRequest{Method: "GET", Path: connectReq.Path, RawQuery: "as=admin"}, want: ErrBadSignature},
		"query changed":    {signReq: SignedRequest{Method: "GET", Path: "/p", RawQuery: "a=1"}, req: &SignedRequest{Method: "GET", Path: "/p", RawQuery: "a=2"}, want: ErrBadSignature},
		"query dropped":    {signReq: SignedRequest{Method: "GET", Path: "/p", RawQuery: "a=1"}, req: &SignedRequest{Method: "GET", Path: "/p"}, want: ErrBadSignature},
		"body changed":     {signReq: SignedRequest{Method: "POST", Path: "/p", Body: body}, req: &SignedRequest{Method: "POST", Path: "/p", Body: []byte(`{"name":"b2"}`)}, want: ErrBadSignature},
		"body added":       {req: &SignedRequest{Method: "GET", Path: connectReq.Path, Body: body}, want: ErrBadSignature},
		"body dropped":     {signReq: SignedRequest{Method: "POST", Path: "/p", Body: body}, req: &SignedRequest{Method: "POST", Path: "/p"}, want: ErrBadSignature},
		"other broker":     {mutate: func(h http.Header) { h.Set(HeaderBrokerID, "b2") }, want: ErrBadSignature},
		"tampered ts":      {mutate: func(h http.Header) { h.Set(HeaderTimestamp, fmt.Sprint(now.Unix()+1)) }, want: ErrBadSignature},
		"tampered nonce":   {mutate: func(h http.Header) { h.Set(HeaderNonce, strings.Repeat("0", 32)) }, want: ErrBadSignature},
		"bad ts":           {mutate: func(h http.Header) { h.Set(HeaderTimestamp, "soon") }, want: ErrBadSignature},
		"no signature":     {mutate: func(h http.Header) { h.Del(HeaderSignature) }, want: ErrBadSignature},
		"not hex":          {mutate: func(h http.Header) { h.Set(HeaderSignature, "zz") }, want: ErrBadSignature},
		"long nonce":       {mutate: func(h http.Header) { h.Set(HeaderNonce, strings.Repeat("a", 200)) }, want: ErrBadSignature},
		"version 1":        {mutate: func(h http.Header) { h.Del(HeaderSignatureVersion) }, want: ErrOldSignature},
		"unknown version":  {mutate: func(h http.Header) { h.Set(HeaderSignatureVersion, "3") }, want: ErrOldSignature},
		"too old":          {at: now.Add(61 * time.Second), want: ErrStale},
		"from the future":  {at: now.Add(-61 * time.Second), want: ErrStale},
		"signed elsewhere": {signReq: SignedRequest{Method: "GET", Path: "/p"}, req: &connectReq, want: ErrBadSignature},
	} {
		t.Run(name, func(t *testing.T) {
			sr := connectReq
			if tc.signReq.Method != "" {
				sr = tc.signReq
			}
			h := http.Header{}
			SignHeaders(h, "b1", testSecret, sr, now)
			if tc.mutate != nil {
				tc.mutate(h)
			}
			secret, req, at := testSecret, sr, now
			if tc.secret != nil {
				secret = tc.secret
			}
			if tc.req != nil {
				req = *tc.req
			}
			if !tc.at.IsZero() {
				at = tc.at
			}
			_, err := VerifySignature("b1", secret, req, h, at, time.Minute)
			if !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
			for _, s := range [][]byte{testSecret, secret} {
				if strings.Contains(err.Error(), string(s)) {
					t.Fatalf("error leaks the secret: %v", err)
				}
			}
			// Unchanged, the same headers verify: the case tests one change.
			if tc.mutate == nil && tc.secret == nil && tc.at.IsZero() {
				if _, err := VerifySignature("b1", testSecret, sr, h, now, time.Minute); err != nil {
					t.Fatalf("the unchanged request does not verify: %v", err)
				}
			}
		})
	}
}

func TestNonceCacheBounded(t *testing.T) {
	now := time.Unix(1700000000, 0)
	c := NewNonceCache(time.Minute, 3)
	verify := func(at time.Time) error {
		r := SignedRequest{Method: "POST", Path: "/p"}
		return c.Verify("b1", testSecret, r, func() http.Header {
			h := http.Header{}
			SignHeaders(h, "b1", testSecret, r, at)
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
				if c.Verify("b1", testSecret, connectReq, h, now) == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
				if err := c.Verify("b1", testSecret, connectReq, signed(now), now); err != nil {
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
