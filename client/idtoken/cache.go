package idtoken

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxRefreshMargin is how long before its expiry a cached token is
// fetched again at most: a token is never sent with less left than what
// a slow request and a clock skew need.
const maxRefreshMargin = 5 * time.Minute

// Cache hands out tokens from a Source, one per audience, fetched again
// before they expire (a quarter of their life before, at most five
// minutes). It is safe for concurrent use; concurrent callers of one
// audience share a fetch.
type Cache struct {
	src Source
	now func() time.Time

	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	mu        sync.Mutex // held by the one fetching
	tok       string
	refreshAt time.Time
	exp       time.Time
	// After a failed fetch the source is not asked again before retryAt:
	// each request would otherwise wait out its timeout in turn.
	retryAt time.Time
	lastErr error
}

// retryAfter is how long a failed fetch holds the next one back.
const retryAfter = 5 * time.Second

// NewCache caches src's tokens.
func NewCache(src Source) *Cache {
	return &Cache{src: src, now: time.Now, m: map[string]*entry{}}
}

// Token is a token for audience that is not due for refresh.
func (c *Cache) Token(ctx context.Context, audience string) (string, error) {
	c.mu.Lock()
	e := c.m[audience]
	if e == nil {
		e = &entry{}
		c.m[audience] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.now()
	if e.tok != "" && now.Before(e.refreshAt) {
		return e.tok, nil
	}
	if now.Before(e.retryAt) {
		if e.tok != "" && now.Before(e.exp) {
			return e.tok, nil
		}
		return "", e.lastErr
	}
	tok, exp, err := c.src.Token(ctx, audience)
	if err != nil {
		e.retryAt, e.lastErr = now.Add(retryAfter), err
		if e.tok != "" && now.Before(e.exp) {
			// The source failed (a metadata server restarting): the
			// cached token is still valid, and a later call tries again.
			return e.tok, nil
		}
		return "", err
	}
	e.retryAt, e.lastErr = time.Time{}, nil
	if !exp.After(now) {
		return "", fmt.Errorf("%s gave a token that expired at %s", c.src, exp.UTC().Format(time.RFC3339))
	}
	margin := min(exp.Sub(now)/4, maxRefreshMargin)
	e.tok, e.exp, e.refreshAt = tok, exp, exp.Add(-margin)
	return tok, nil
}

// Auth is one connection's transport auth: its settings, the cache its
// tokens come from and the Hub they are for. The zero value (and a nil
// *Auth) adds nothing.
type Auth struct {
	Settings Settings
	Cache    *Cache
	// Hub is the Hub's URL: Transport adds the token only to requests
	// for its scheme and host (a redirect elsewhere goes without it).
	// Empty: every request (Apply's callers choose the request).
	Hub *url.URL
}

// New is the transport auth of a connection to hubURL with the
// connection's own settings conn, after the environment's overrides
// (Effective). With no mode it returns nil: requests go out as they are.
// The token source is chosen once (DefaultSource).
func New(conn Settings, hubURL string, getenv func(string) string) (*Auth, error) {
	s, err := Effective(conn, hubURL, getenv)
	if err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, nil
	}
	hub, err := url.Parse(hubURL)
	if err != nil || hub.Host == "" {
		return nil, fmt.Errorf("transport mode %s: %q is not a Hub URL", s.Mode, hubURL)
	}
	if hub.Scheme != "https" && !(hub.Scheme == "http" && isLoopback(hub.Hostname())) {
		// The token lets its bearer through the guard: never in clear
		// text beyond this machine.
		return nil, fmt.Errorf("transport mode %s needs an https Hub URL (or http on loopback), not %s", s.Mode, hubURL)
	}
	src, err := DefaultSource(getenv)
	if err != nil {
		return nil, fmt.Errorf("transport mode %s (audience %s): %w", s.Mode, s.Audience, err)
	}
	return &Auth{Settings: s, Cache: NewCache(src), Hub: hub}, nil
}

// forHub reports whether r goes to a's Hub (its scheme and host).
func (a *Auth) forHub(r *http.Request) bool {
	return a.Hub == nil || (strings.EqualFold(r.URL.Scheme, a.Hub.Scheme) && strings.EqualFold(r.URL.Host, a.Hub.Host))
}

// Apply sets the token header on h (nothing for a nil Auth).
func (a *Auth) Apply(ctx context.Context, h http.Header) error {
	if a == nil || !a.Settings.Enabled() {
		return nil
	}
	tok, err := a.Cache.Token(ctx, a.Settings.Audience)
	if err != nil {
		return fmt.Errorf("transport auth (%s, audience %s): %w", a.Settings.Mode, a.Settings.Audience, err)
	}
	h.Set(a.Settings.Header(), "Bearer "+tok)
	return nil
}

// Transport adds a's token to every request it sends through Base
// (http.DefaultTransport when nil).
type Transport struct {
	Base http.RoundTripper
	Auth *Auth
}

func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Auth == nil || !t.Auth.Settings.Enabled() || !t.Auth.forHub(r) {
		// A redirect to another host (Go's client calls RoundTrip for
		// each hop) goes without the token.
		return base.RoundTrip(r)
	}
	r2 := r.Clone(r.Context()) // a RoundTripper must not change its request
	if err := t.Auth.Apply(r.Context(), r2.Header); err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	return base.RoundTrip(r2)
}
