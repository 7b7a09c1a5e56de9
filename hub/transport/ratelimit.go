package transport

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// IPLimiter is a token bucket (golang.org/x/time/rate) per client address,
// for the routes that need no caller (join, connect, sign-in) and for
// failed authentications. It keeps at most maxBuckets addresses; when
// full it forgets the ones whose bucket has refilled (a fresh bucket is
// the same), then the least recently used one.
type IPLimiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

const maxBuckets = 10000

func NewIPLimiter(perMinute, burst int) *IPLimiter {
	return &IPLimiter{limit: rate.Limit(float64(perMinute) / 60), burst: burst, buckets: map[string]*bucket{}}
}

func (l *IPLimiter) get(key string, now time.Time) *bucket {
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.evict(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.last = now
	return b
}

// allow takes one token for key; when there is none it says how long
// until there is, and takes nothing.
func (l *IPLimiter) Allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.get(key, now).lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Minute
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// blocked reports, without taking a token, whether key has none left and
// how long until it has one. It is the check before an authentication:
// the token is taken only when the authentication fails (fail).
func (l *IPLimiter) Blocked(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		return false, 0
	}
	tokens := b.lim.TokensAt(now)
	if tokens >= 1 {
		return false, 0
	}
	if l.limit <= 0 {
		return true, time.Minute
	}
	return true, time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second))
}

// fail takes a token for one failed attempt from key (none if it has
// none left: blocked then already answers 429).
func (l *IPLimiter) Fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.get(key, now).lim.AllowN(now, 1)
}

// evict drops the buckets that are full by now; if none is, it drops the
// least recently used one. Called with l.mu held.
func (l *IPLimiter) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	for k, b := range l.buckets {
		if b.lim.TokensAt(now) >= float64(l.burst) {
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

// ClientIP is the address the request came from, as the rate limits key
// it (addrKey). X-Forwarded-For is not trusted: anyone can send it, and a
// limit keyed on it limits nothing.
func ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return addrKey(net.ParseIP(host), host)
}

// addrKey is the key of a client address for the limits: the IPv4
// address, or the /64 of an IPv6 one (a single host usually holds a whole
// /64, so a key per address would let it spread over 2^64 keys).
func addrKey(ip net.IP, fallback string) string {
	if ip == nil {
		return fallback
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
