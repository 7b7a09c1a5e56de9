package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Broker request signing: a broker proves it holds its secret by an
// HMAC-SHA256 over the method, path, time and a nonce; the Hub accepts a
// signature once, within a time window.

// Signature headers.
const (
	HeaderBrokerID  = "X-Scion-Broker-ID"
	HeaderTimestamp = "X-Scion-Timestamp"
	HeaderNonce     = "X-Scion-Nonce"
	HeaderSignature = "X-Scion-Signature"
)

// maxNonceLen bounds what a nonce may cost the cache (ours are 32 hex
// characters).
const maxNonceLen = 128

// Sign returns the hex HMAC-SHA256 of method, path, ts in unix seconds and
// nonce, joined by "\n".
func Sign(secret []byte, method, path string, ts time.Time, nonce string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(method + "\n" + path + "\n" + strconv.FormatInt(ts.Unix(), 10) + "\n" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// SignHeaders sets the signature headers on h for a request at now, with a
// fresh random nonce.
func SignHeaders(h http.Header, brokerID string, secret []byte, method, path string, now time.Time) {
	var n [16]byte
	_, _ = rand.Read(n[:]) // crypto/rand.Read never fails (it crashes instead)
	nonce := hex.EncodeToString(n[:])
	h.Set(HeaderBrokerID, brokerID)
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderNonce, nonce)
	h.Set(HeaderSignature, Sign(secret, method, path, now, nonce))
}

// Verification errors; Verify wraps them with detail.
var (
	ErrBadSignature   = errors.New("wire: bad request signature")
	ErrStale          = errors.New("wire: request timestamp outside the allowed window")
	ErrReplay         = errors.New("wire: nonce already used")
	ErrNonceCacheFull = errors.New("wire: too many recent nonces")
)

// NonceCache verifies signed broker requests and remembers their nonces
// long enough to reject replays. Memory is bounded: a nonce is kept only
// until its timestamp leaves the window (after which the timestamp check
// rejects it anyway), and at most max are kept; when full of unexpired
// nonces, Verify refuses requests rather than grow.
type NonceCache struct {
	window time.Duration
	max    int

	mu        sync.Mutex
	seen      map[string]time.Time // brokerID+"\n"+nonce -> when it may be forgotten
	oldest    time.Time            // earliest forget time in seen (zero: empty)
	lastSweep time.Time
}

// NewNonceCache makes a cache accepting timestamps within window of now and
// holding at most max nonces.
func NewNonceCache(window time.Duration, max int) *NonceCache {
	return &NonceCache{window: window, max: max, seen: make(map[string]time.Time)}
}

// Verify checks the signature headers in h for a request by brokerID with
// the given secret, method and path at now, and records the nonce.
func (c *NonceCache) Verify(brokerID string, secret []byte, method, path string, h http.Header, now time.Time) error {
	if got := h.Get(HeaderBrokerID); got != brokerID {
		return fmt.Errorf("%w: broker ID header %q does not match %q", ErrBadSignature, got, brokerID)
	}
	tsText, nonce, sig := h.Get(HeaderTimestamp), h.Get(HeaderNonce), h.Get(HeaderSignature)
	if tsText == "" || nonce == "" || sig == "" {
		return fmt.Errorf("%w: missing %s, %s or %s", ErrBadSignature, HeaderTimestamp, HeaderNonce, HeaderSignature)
	}
	if len(nonce) > maxNonceLen {
		return fmt.Errorf("%w: nonce longer than %d", ErrBadSignature, maxNonceLen)
	}
	secs, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q is not unix seconds", ErrBadSignature, tsText)
	}
	ts := time.Unix(secs, 0)
	if skew := now.Sub(ts); skew > c.window || skew < -c.window {
		return fmt.Errorf("%w: timestamp is %v off (window %v)", ErrStale, skew.Round(time.Second), c.window)
	}
	want, err := hex.DecodeString(Sign(secret, method, path, ts, nonce))
	got, err2 := hex.DecodeString(sig)
	if err != nil || err2 != nil || !hmac.Equal(got, want) {
		return fmt.Errorf("%w: signature does not match %s %s", ErrBadSignature, method, path)
	}
	// Only an authentic request gets to spend cache space.
	return c.remember(brokerID+"\n"+nonce, ts.Add(c.window), now)
}

func (c *NonceCache) remember(key string, forgetAt, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.seen[key]; ok && now.Before(t) {
		return ErrReplay
	}
	// Sweep when something has expired and either the cache is full or a
	// window passed since the last sweep: amortized O(1) per Verify, and a
	// full cache of live nonces is refused without rescanning it each time.
	if !now.Before(c.oldest) && (len(c.seen) >= c.max || now.Sub(c.lastSweep) > c.window) {
		c.oldest = time.Time{}
		for k, t := range c.seen {
			if !now.Before(t) {
				delete(c.seen, k)
			} else if c.oldest.IsZero() || t.Before(c.oldest) {
				c.oldest = t
			}
		}
		c.lastSweep = now
	}
	if len(c.seen) >= c.max {
		return fmt.Errorf("%w: %d unexpired", ErrNonceCacheFull, len(c.seen))
	}
	if c.oldest.IsZero() || forgetAt.Before(c.oldest) {
		c.oldest = forgetAt
	}
	c.seen[key] = forgetAt
	return nil
}
