package identity

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/transport"
)

// Rate is a token bucket: PerMinute tokens a minute, up to Burst at once.
type Rate struct{ PerMinute, Burst int }

// RateLimits are the limits per client address of the routes that need
// no caller and of failed authentications (the OIDC sign-in routes have
// theirs in signin.Config).
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
	join     *transport.IPLimiter
	connect  *transport.IPLimiter
	authFail *transport.IPLimiter
}

func newRateLimits(l RateLimits) *rateLimits {
	return &rateLimits{
		join:     transport.NewIPLimiter(l.Join.PerMinute, l.Join.Burst),
		connect:  transport.NewIPLimiter(l.Connect.PerMinute, l.Connect.Burst),
		authFail: transport.NewIPLimiter(l.AuthFailures.PerMinute, l.AuthFailures.Burst),
	}
}

// refuseRateLimited answers 429 rate_limited with Retry-After (whole
// seconds, at least 1). The request body, if any, is not read: the
// connection is closed after the answer instead, so a slow body cannot
// hold it until the read timeout.
func (s *Service) refuseRateLimited(w http.ResponseWriter, r *http.Request, wait time.Duration, what string) {
	secs := retrySecs(wait)
	s.refuse429(w, r, wait, api.Errorf(api.CodeRateLimited,
		"too many %s from this address; retry in %d s", what, secs).WithDetail("retryAfter", secs))
}

func retrySecs(wait time.Duration) int { return max(1, int(math.Ceil(wait.Seconds()))) }

// refuse429 writes e (a 429) with Retry-After, and closes the connection
// after it if the request has a body, which is never read.
func (s *Service) refuse429(w http.ResponseWriter, r *http.Request, wait time.Duration, e error) {
	w.Header().Set("Retry-After", strconv.Itoa(retrySecs(wait)))
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		// Discarding the unread body after the handler would wait on the
		// client; a past read deadline makes it fail at once.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	httpapi.WriteError(s.log, w, r, e)
}

// rateLimited runs h only while the client's address has tokens in l.
func (s *Service) rateLimited(l *transport.IPLimiter, what string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.Allow(transport.ClientIP(r), s.opts.Now()); !ok {
			s.refuseRateLimited(w, r, wait, what)
			return
		}
		h(w, r)
	}
}

// JoinLimited runs h, the join route, under the join limit (RateLimits.Join).
func (s *Service) JoinLimited(h http.HandlerFunc) http.HandlerFunc {
	return s.rateLimited(s.rl.join, "join requests", h)
}

// ConnectLimited runs h, the control channel's upgrade, under the connect
// limit (RateLimits.Connect).
func (s *Service) ConnectLimited(h http.HandlerFunc) http.HandlerFunc {
	return s.rateLimited(s.rl.connect, "control channel connections", h)
}

// RefuseIfBlocked answers 429 and reports true while r's client address
// is over its limit of failed authentications: a route that checks a
// credential of its own (a join token) asks before looking at it.
func (s *Service) RefuseIfBlocked(w http.ResponseWriter, r *http.Request) bool {
	if blocked, wait := s.rl.authFail.Blocked(transport.ClientIP(r), s.opts.Now()); blocked {
		s.refuseRateLimited(w, r, wait, "failed authentications")
		return true
	}
	return false
}

// CountAuthFailure takes one token of the failed-authentication bucket
// of r's client address: a route that refused a credential of its own
// (a join token, a caller that is no broker on the control channel).
func (s *Service) CountAuthFailure(r *http.Request) {
	s.rl.authFail.Fail(transport.ClientIP(r), s.opts.Now())
}
