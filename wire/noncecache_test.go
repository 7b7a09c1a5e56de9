package wire

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ErrNonceCacheFull: a NonceCache full of unexpired nonces.
var ErrNonceCacheFull = errors.New("wire: too many recent nonces")

// NonceCache verifies signed broker requests and remembers their nonces
// in memory: the tests' replay check (the Hub keeps nonces in its
// database, to survive restarts). Memory is bounded: a
// nonce is kept only until its timestamp leaves the window, and at most
// max are kept; when full of unexpired nonces, Verify refuses requests
// rather than grow.
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

// Verify is VerifySignature, then records the nonce (ErrReplay if seen).
func (c *NonceCache) Verify(brokerID string, secret []byte, r SignedRequest, h http.Header, now time.Time) error {
	n, err := VerifySignature(brokerID, secret, r, h, now, c.window)
	if err != nil {
		return err
	}
	return c.remember(brokerID+"\n"+n.Value, n.ForgetAt, now)
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
