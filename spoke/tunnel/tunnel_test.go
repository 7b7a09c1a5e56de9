package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// fixture is a tunnel to a test server with fast timings.
type fixture struct {
	srv *testServer
	tun *Tunnel
	cfg Config
}

func newFixture(t *testing.T, edit func(*Config)) *fixture {
	t.Helper()
	signer, pemKey := newKey(t)
	srv := startServer(t, signer.PublicKey())
	cfg := Config{
		Host: srv.addr(), User: "broker", PrivateKey: pemKey,
		KnownHosts:        knownHostsLine(srv.addr(), srv.hostPK),
		KeepaliveInterval: 100 * time.Millisecond, KeepaliveMax: 3,
		ConnectTimeout: 2 * time.Second, BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
	}
	if edit != nil {
		edit(&cfg)
	}
	tun, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tun.Close() })
	return &fixture{srv: srv, tun: tun, cfg: cfg}
}

// roundTrip writes msg on c and reads it back (the target is an echo).
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(buf) != msg {
		t.Fatalf("read %q, want %q", buf, msg)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestDialPipesToTarget(t *testing.T) {
	f := newFixture(t, nil)
	echo := echoServer(t)
	for i := range 3 { // three channels on one connection
		c, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", echo)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c, fmt.Sprintf("hello %d", i))
		c.Close()
	}
	if n := f.srv.accepted(); n != 1 {
		t.Errorf("server accepted %d SSH connections, want 1 (channels share one)", n)
	}
}

func TestListenServesHTTPThroughTunnel(t *testing.T) {
	f := newFixture(t, nil)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "job %s", r.URL.Path)
	}))
	t.Cleanup(api.Close)
	fw, err := f.tun.Listen(api.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fw.Addr(), "127.0.0.1:") {
		t.Errorf("Addr %q, want 127.0.0.1:<port>", fw.Addr())
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, p := range []string{"/a", "/b"} {
		resp, err := client.Get("http://" + fw.Addr() + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "job "+p {
			t.Errorf("GET %s: %q", p, body)
		}
	}
	// The Dialer seam: an http.Transport dials through the tunnel directly.
	tr := &http.Transport{DialContext: f.tun.DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(api.URL + "/direct")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "job /direct" {
		t.Errorf("GET via DialContext: %q", body)
	}
}

func TestWrongHostKeyRefused(t *testing.T) {
	other, _ := newKey(t)
	f := newFixture(t, func(c *Config) { c.KnownHosts = knownHostsLine(c.Host, other.PublicKey()) })
	start := time.Now()
	_, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", echoServer(t))
	var e *Error
	if !errors.As(err, &e) || e.Stage != StageHostKey {
		t.Fatalf("err = %v, want a host key error", err)
	}
	if !strings.Contains(err.Error(), f.cfg.Host) || !strings.Contains(err.Error(), "mismatch") {
		t.Errorf("error %q does not name the bastion and the mismatch", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("a host key mismatch was retried for %v; it cannot get better", time.Since(start))
	}
}

func TestConfigRefusals(t *testing.T) {
	signer, pemKey := newKey(t)
	good := Config{Host: "127.0.0.1:22", User: "u", PrivateKey: pemKey,
		KnownHosts: knownHostsLine("127.0.0.1:22", signer.PublicKey())}
	for name, edit := range map[string]func(*Config){
		"no known_hosts":  func(c *Config) { c.KnownHosts = "" },
		"bad known_hosts": func(c *Config) { c.KnownHosts = "[h]:22 ssh-ed25519 notbase64" },
		"revoked marker":  func(c *Config) { c.KnownHosts = "@revoked " + c.KnownHosts },
		"no key":          func(c *Config) { c.PrivateKey = nil },
		"bad key":         func(c *Config) { c.PrivateKey = []byte("-----BEGIN NOPE-----") },
		"no port":         func(c *Config) { c.Host = "bastion" },
		"no user":         func(c *Config) { c.User = "" },
		"insecure cipher": func(c *Config) { c.Ciphers = []string{ssh.CipherAES128GCM, ssh.InsecureCipherAES128CBC} },
		"unknown cipher":  func(c *Config) { c.Ciphers = []string{"none"} },
	} {
		c := good
		edit(&c)
		_, err := New(c)
		var e *Error
		if !errors.As(err, &e) || e.Stage != StageConfig {
			t.Errorf("%s: err = %v, want a config error", name, err)
		}
	}
	if _, err := New(good); err != nil {
		t.Errorf("good config: %v", err)
	}
}

func TestWrongUserKeyIsAuthError(t *testing.T) {
	_, otherPEM := newKey(t)
	f := newFixture(t, func(c *Config) { c.PrivateKey = otherPEM })
	_, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", "127.0.0.1:1")
	var e *Error
	if !errors.As(err, &e) || e.Stage != StageAuth {
		t.Fatalf("err = %v, want an auth error", err)
	}
}

func TestChannelRefusedNamesTarget(t *testing.T) {
	f := newFixture(t, nil)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	_, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", closed)
	var e *Error
	if !errors.As(err, &e) || e.Stage != StageChannel || e.Target != closed {
		t.Fatalf("err = %v, want a channel error naming %s", err, closed)
	}
}

func TestKeepaliveDeclaresFrozenServerDead(t *testing.T) {
	f := newFixture(t, nil)
	echo := echoServer(t)
	c, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", echo)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "before")
	f.srv.frozen.Store(true)
	start := time.Now()
	// An in-flight read must end when the connection is declared dead,
	// not hang on TCP timeouts.
	readErr := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); readErr <- err }()
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("read succeeded on a frozen server")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("in-flight read still hanging 3s after the server froze")
	}
	took := time.Since(start)
	// KeepaliveMax unanswered keepalives, each given one interval.
	want := time.Duration(f.cfg.KeepaliveMax+1) * f.cfg.KeepaliveInterval
	if took < time.Duration(f.cfg.KeepaliveMax-1)*f.cfg.KeepaliveInterval || took > want+time.Second {
		t.Errorf("declared dead after %v, want about %v", took, want)
	}
	// The next dial reconnects to the (now answering) server.
	f.srv.frozen.Store(false)
	c2, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", echo)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c2, "after")
	c2.Close()
	if n := f.srv.accepted(); n != 2 {
		t.Errorf("server accepted %d connections, want 2", n)
	}
}

func TestReconnectAfterServerDrops(t *testing.T) {
	f := newFixture(t, nil)
	echo := echoServer(t)
	c, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", echo)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "one")
	f.srv.drop()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read succeeded on a dropped connection")
	}
	start := time.Now()
	c2, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", echo)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c2, "two")
	c2.Close()
	if d := time.Since(start); d > f.cfg.BackoffMax+time.Second {
		t.Errorf("reconnect took %v", d)
	}
}

func TestDialBoundedByContext(t *testing.T) {
	// A bastion that accepts TCP and never speaks SSH.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	signer, pemKey := newKey(t)
	tun, err := New(Config{Host: ln.Addr().String(), User: "u", PrivateKey: pemKey,
		KnownHosts: knownHostsLine(ln.Addr().String(), signer.PublicKey()), ConnectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = tun.DialContext(ctx, "tcp", "api:443")
	if err == nil {
		t.Fatal("dial succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("dial took %v with a 300ms context", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("err = %v, want the context's end, naming the bastion", err)
	}

	// A bastion that refuses TCP: retried with backoff until ctx ends.
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := ln2.Addr().String()
	ln2.Close()
	tun2, _ := New(Config{Host: gone, User: "u", PrivateKey: pemKey, KnownHosts: knownHostsLine(gone, signer.PublicKey()),
		BackoffMin: 20 * time.Millisecond})
	defer tun2.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	_, err = tun2.DialContext(ctx2, "tcp", "api:443")
	var e *Error
	if !errors.As(err, &e) || e.Stage != StageDial || !strings.Contains(err.Error(), "refused") {
		t.Errorf("err = %v, want a dial error saying refused", err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	echo := echoServer(t)
	f := newFixture(t, nil) // starts the test server; New starts nothing
	before := runtime.NumGoroutine()
	fw, err := f.tun.Listen(echo)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := net.Dial("tcp", fw.Addr())
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, lc, "piped")
	c, err := f.tun.DialContext(ctxT(t, 5*time.Second), "tcp", echo)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "direct")
	f.tun.Close()
	if _, err := lc.Read(make([]byte, 1)); err == nil {
		t.Error("piped connection still open after Close")
	}
	lc.Close()
	c.Close()
	if _, err := f.tun.DialContext(ctxT(t, time.Second), "tcp", echo); !errors.Is(err, ErrClosed) {
		t.Errorf("dial after Close: %v, want ErrClosed", err)
	}
	if _, err := net.Dial("tcp", fw.Addr()); err == nil {
		t.Error("listener still accepting after Close")
	}
	f.srv.drop()
	// The test server's goroutines end with its connections; the Tunnel's
	// with Close. Poll: goroutines take a moment to return.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// The bastion tier's seam in spoke/fleet (a Dialer with this one method):
// a Tunnel must satisfy it.
var _ interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
} = (*Tunnel)(nil)
