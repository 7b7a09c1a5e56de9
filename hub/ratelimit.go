package hub

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/scion-go/scion/api"
)

// ipLimiter is a token bucket (golang.org/x/time/rate) per client address,
// for the routes that need no caller (join, connect, sign-in) and for
// failed authentications. It keeps at most maxBuckets addresses; when
// full it forgets the ones whose bucket has refilled (a fresh bucket is
// the same), then the least recently used one.
type ipLimiter struct {
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

func newIPLimiter(perMinute, burst int) *ipLimiter {
	return &ipLimiter{limit: rate.Limit(float64(perMinute) / 60), burst: burst, buckets: map[string]*bucket{}}
}

func (l *ipLimiter) get(key string, now time.Time) *bucket {
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
func (l *ipLimiter) allow(key string, now time.Time) (bool, time.Duration) {
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
func (l *ipLimiter) blocked(key string, now time.Time) (bool, time.Duration) {
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
func (l *ipLimiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.get(key, now).lim.AllowN(now, 1)
}

// evict drops the buckets that are full by now; if none is, it drops the
// least recently used one. Called with l.mu held.
func (l *ipLimiter) evict(now time.Time) {
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

// Rate is a token bucket: PerMinute tokens a minute, up to Burst at once.
type Rate struct{ PerMinute, Burst int }

// RateLimits are the limits per client address of the routes that need
// no caller and of failed authentications (the OIDC sign-in routes have
// theirs in OIDCConfig).
type RateLimits struct {
	Join         Rate // POST /api/v1/runtime-brokers/join
	Connect      Rate // GET /api/v1/runtime-brokers/connect (upgrade attempts)
	AuthFailures Rate // a credential that failed, on any route
}

// DefaultRateLimits: a broker joins once and reconnects with a backoff; a
// CLI signs in now and then. The bursts let a fleet behind one NAT (or a
// Hub restart that makes every broker reconnect at once) through, while a
// flood from one address is answered 429 before the Hub reads its body
// or touches the database.
func DefaultRateLimits() RateLimits {
	return RateLimits{Join: Rate{20, 10}, Connect: Rate{120, 60}, AuthFailures: Rate{30, 30}}
}

// rateLimits are the Hub's per-address rate limiters.
type rateLimits struct {
	join     *ipLimiter
	connect  *ipLimiter
	authFail *ipLimiter
}

func newRateLimits(l RateLimits) *rateLimits {
	return &rateLimits{
		join:     newIPLimiter(l.Join.PerMinute, l.Join.Burst),
		connect:  newIPLimiter(l.Connect.PerMinute, l.Connect.Burst),
		authFail: newIPLimiter(l.AuthFailures.PerMinute, l.AuthFailures.Burst),
	}
}

// refuseRateLimited answers 429 rate_limited with Retry-After (whole
// seconds, at least 1). The request body, if any, is not read: the
// connection is closed after the answer instead, so a slow body cannot
// hold it until the read timeout.
func (s *Server) refuseRateLimited(w http.ResponseWriter, r *http.Request, wait time.Duration, what string) {
	secs := retrySecs(wait)
	s.refuse429(w, r, wait, api.Errorf(api.CodeRateLimited,
		"too many %s from this address; retry in %d s", what, secs).WithDetail("retryAfter", secs))
}

func retrySecs(wait time.Duration) int { return max(1, int(math.Ceil(wait.Seconds()))) }

// refuse429 writes e (a 429) with Retry-After, and closes the connection
// after it if the request has a body, which is never read.
func (s *Server) refuse429(w http.ResponseWriter, r *http.Request, wait time.Duration, e error) {
	w.Header().Set("Retry-After", strconv.Itoa(retrySecs(wait)))
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		// Discarding the unread body after the handler would wait on the
		// client; a past read deadline makes it fail at once.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	s.writeError(w, r, e)
}

// rateLimited runs h only while the client's address has tokens in l.
func (s *Server) rateLimited(l *ipLimiter, what string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.allow(clientIP(r), s.opts.Now()); !ok {
			s.refuseRateLimited(w, r, wait, what)
			return
		}
		h(w, r)
	}
}

// clientIP is the address the request came from, as the rate limits key
// it (addrKey). X-Forwarded-For is not trusted: anyone can send it, and a
// limit keyed on it limits nothing.
func clientIP(r *http.Request) string {
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
