package hub

import (
	"math"
	"net"
	"net/http"
	"sync"
	"time"
)

// ipLimiter is a token bucket per client address, for the routes that
// need no caller (sign-in). It keeps at most maxBuckets addresses; when
// full it forgets the ones whose bucket has refilled, then the oldest.
type ipLimiter struct {
	perSecond float64
	burst     float64

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

const maxBuckets = 10000

func newIPLimiter(perMinute, burst int) *ipLimiter {
	return &ipLimiter{perSecond: float64(perMinute) / 60, burst: float64(burst), buckets: map[string]*bucket{}}
}

// allow takes one token for key; when there is none it says how long
// until there is.
func (l *ipLimiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.evict(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.perSecond)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.perSecond * float64(time.Second))
	return false, wait
}

// evict drops the buckets that would be full by now; if none is, it drops
// the least recently used one. Called with l.mu held.
func (l *ipLimiter) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.perSecond >= l.burst {
			delete(l.buckets, k)
			continue
		}
		if oldest == "" || b.last.Before(oldestAt) {
			oldest, oldestAt = k, b.last
		}
	}
	if len(l.buckets) >= maxBuckets {
		delete(l.buckets, oldest)
	}
}

// clientIP is the address the request came from. X-Forwarded-For is not
// trusted: anyone can send it, and a limit keyed on it limits nothing.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
