// Package iapproxy is an identity-aware reverse proxy for tests, in front
// of a Hub as Google IAP would be: every request, the WebSocket upgrade
// included, must carry a valid service-account ID token for the proxy's
// audience in Proxy-Authorization (IAP's header for applications that
// use Authorization themselves), or it is refused with 401 before it
// reaches the Hub. The token header is removed before forwarding.
//
// Cut closes every connection the proxy holds (a WebSocket too) and
// refuses new ones until Restore: the network in front of one Hub going
// away while the rest stays.
package iapproxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Verifier checks a token for an audience and returns who it is.
type Verifier func(token, audience string) (string, error)

// Proxy is a running identity-aware proxy.
type Proxy struct {
	*httptest.Server
	Audience string

	verify Verifier
	rp     *httputil.ReverseProxy

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	cut      bool
	accepted map[string]int // by caller (the token's email)
	refused  []string       // why, one per refused request
}

// New starts a proxy for upstream (a Hub URL) that admits tokens verify
// accepts for audience; it stops when the test ends.
func New(t testing.TB, upstream, audience string, verify Verifier) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Audience: audience, verify: verify, accepted: map[string]int{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
			r.Out.Header.Del("Proxy-Authorization")
		},
	}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	// httptest forgets a connection once it is hijacked (a proxied
	// WebSocket is): the listener keeps them all, for Cut.
	p.conns = map[net.Conn]struct{}{}
	p.Listener = &trackingListener{Listener: p.Listener, p: p}
	p.Start()
	t.Cleanup(p.Close)
	return p
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut {
		// A cut network: no answer at all.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		http.Error(w, "cut", http.StatusBadGateway)
		return
	}
	who, why := p.check(r)
	p.mu.Lock()
	if why != "" {
		p.refused = append(p.refused, why)
	} else {
		p.accepted[who]++
	}
	p.mu.Unlock()
	if why != "" {
		// IAP's refusal is its own page, not the application's error.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("<html><body>Invalid IAP credentials: " + why + "</body></html>"))
		return
	}
	p.rp.ServeHTTP(w, r)
}

func (p *Proxy) check(r *http.Request) (who, why string) {
	h := r.Header.Get("Proxy-Authorization")
	if h == "" {
		return "", "no Proxy-Authorization"
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return "", "Proxy-Authorization is not a bearer token"
	}
	who, err := p.verify(tok, p.Audience)
	if err != nil {
		return "", "bad token: " + err.Error()
	}
	return who, ""
}

// Cut closes every open connection (hijacked WebSockets included) and
// drops new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

type trackingListener struct {
	net.Listener
	p *Proxy
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.p.mu.Lock()
	l.p.conns[c] = struct{}{}
	l.p.mu.Unlock()
	return &trackedConn{Conn: c, p: l.p}, nil
}

type trackedConn struct {
	net.Conn
	p *Proxy
}

func (c *trackedConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.conns, c.Conn)
	c.p.mu.Unlock()
	return c.Conn.Close()
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Accepted is how many requests the caller's tokens got through.
func (p *Proxy) Accepted(who string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted[who]
}

// Refused is why each refused request was refused.
func (p *Proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}
