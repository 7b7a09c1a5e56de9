package tunnel

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestRealSSHD runs the tunnel through Debian's openssh-server: HTTPS to a
// local API server through a Forward with the TLS server name of the real
// host (the kubeconfig's shape), then a connection kill mid-stream after
// which the next dial reconnects within the backoff.
func TestRealSSHD(t *testing.T) {
	signer, pemKey := newKey(t)
	srv := startSSHD(t, signer.PublicKey())

	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			fl := w.(http.Flusher)
			for i := 0; r.Context().Err() == nil && i < 200; i++ {
				fmt.Fprintf(w, "line %d\n", i)
				fl.Flush()
				time.Sleep(20 * time.Millisecond)
			}
			return
		}
		fmt.Fprint(w, "ok ", r.TLS.ServerName)
	}))
	api.Config.ErrorLog = log.New(io.Discard, "", 0) // the kill cuts a TLS handshake or two
	api.StartTLS()                                   // its certificate names example.com, not 127.0.0.1
	t.Cleanup(api.Close)
	apiAddr := api.Listener.Addr().String()

	tun, err := New(Config{
		Host: srv.addr, User: currentUser(t), PrivateKey: pemKey,
		KnownHosts:        knownHostsLine(srv.addr, srv.hostPK),
		KeepaliveInterval: 200 * time.Millisecond, KeepaliveMax: 3,
		ConnectTimeout: 3 * time.Second, BackoffMin: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tun.Close() })

	// The kubeconfig's shape: https://127.0.0.1:<port>, TLS name the real host.
	fw, err := tun.Listen(apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(api.Certificate())
	tlsCfg := &tls.Config{RootCAs: roots, ServerName: "example.com"}
	viaForward := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	get(t, viaForward, "https://"+fw.Addr()+"/", "ok example.com")

	// The same through DialContext in a transport, then killed mid-stream.
	tr := &http.Transport{DialContext: tun.DialContext, TLSClientConfig: tlsCfg}
	direct := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	resp, err := direct.Get("https://" + apiAddr + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "line 0\n" {
		t.Fatalf("stream: %q, %v", line, err)
	}
	if n := srv.killSessions(); n == 0 {
		t.Fatal("no sshd session process to kill")
	}
	cut := time.Now()
	_, err = io.Copy(io.Discard, br)
	resp.Body.Close()
	if err == nil {
		t.Fatal("stream ended cleanly after its sshd was killed")
	}
	if d := time.Since(cut); d > 2*time.Second {
		t.Errorf("stream error %v after the kill, want well within the keepalive window", d)
	}
	tr.CloseIdleConnections()

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := tun.DialContext(ctx, "tcp", apiAddr)
	if err != nil {
		t.Fatalf("dial after the kill: %v\nsshd log:\n%s", err, srv.log.String())
	}
	c.Close()
	if d := time.Since(start); d > 400*time.Millisecond+time.Second {
		t.Errorf("reconnect took %v, want within the backoff (max 400ms) and a handshake", d)
	}
	get(t, viaForward, "https://"+fw.Addr()+"/", "ok example.com")
	get(t, direct, "https://"+apiAddr+"/", "ok example.com")
	// One SSH login before the kill, one after: every channel shared it.
	if n := strings.Count(srv.log.String(), "Accepted publickey"); n != 2 {
		t.Errorf("sshd logged %d logins, want 2:\n%s", n, srv.log.String())
	}
}

func get(t *testing.T, c *http.Client, url, want string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || strings.TrimSpace(string(b)) != want {
		t.Fatalf("GET %s: %q, %v; want %q", url, b, err, want)
	}
}

// TestRealSSHDFrozen stops (SIGSTOP) the sshd processes serving the
// tunnel: the TCP connection stays up and silent, as behind a NAT that
// dropped it. Keepalives declare it dead within about interval*max, the
// in-flight read ends, and the next dial logs in again.
func TestRealSSHDFrozen(t *testing.T) {
	// The echo target first: its cleanup waits for its connections, which
	// end only when sshd's cleanup has killed the stopped processes.
	target := echoServer(t)
	signer, pemKey := newKey(t)
	srv := startSSHD(t, signer.PublicKey())
	const interval, maxMissed = 150 * time.Millisecond, 3
	tun, err := New(Config{
		Host: srv.addr, User: currentUser(t), PrivateKey: pemKey,
		KnownHosts:        knownHostsLine(srv.addr, srv.hostPK),
		KeepaliveInterval: interval, KeepaliveMax: maxMissed,
		ConnectTimeout: 3 * time.Second, BackoffMin: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tun.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tun.DialContext(ctx, "tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "before")
	if n := srv.signalSessions(syscall.SIGSTOP); n == 0 {
		t.Fatal("no sshd session process to stop")
	}
	defer srv.killSessions() // a stopped process would hold its sockets
	frozen := time.Now()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read succeeded through a frozen sshd")
	}
	want := (maxMissed + 1) * interval
	if d := time.Since(frozen); d > want+time.Second {
		t.Errorf("frozen connection declared dead after %v, want about %v", d, want)
	}
	c2, err := tun.DialContext(ctx, "tcp", target)
	if err != nil {
		t.Fatalf("dial after the freeze: %v", err)
	}
	roundTrip(t, c2, "after")
	c2.Close()
}

// The cipher preference reaches the real sshd: each forced cipher is the
// one both directions negotiate, and the default is x/crypto/ssh's first
// (AES-GCM; docs/performance.md explains the choice).
func TestRealSSHDCiphers(t *testing.T) {
	signer, pemKey := newKey(t)
	srv := startSSHD(t, signer.PublicKey())
	echo := echoServer(t)
	for _, want := range []string{"", ssh.CipherChaCha20Poly1305, ssh.CipherAES256GCM, ssh.CipherAES128CTR} {
		cfg := Config{Host: srv.addr, User: currentUser(t), PrivateKey: pemKey, KnownHosts: knownHostsLine(srv.addr, srv.hostPK)}
		if want != "" {
			cfg.Ciphers = []string{want}
		}
		tun, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tun.Algorithms(); ok {
			t.Error("Algorithms before the first dial reported a connection")
		}
		c, err := tun.DialContext(ctxT(t, 5*time.Second), "tcp", echo)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c, "hello "+want)
		c.Close()
		alg, ok := tun.Algorithms()
		if want == "" {
			want = ssh.CipherAES128GCM
		}
		if !ok || alg.Read.Cipher != want || alg.Write.Cipher != want {
			t.Errorf("negotiated %+v (ok %v), want %s both ways", alg, ok, want)
		}
		tun.Close()
		if _, ok := tun.Algorithms(); ok {
			t.Error("Algorithms after Close reported a connection")
		}
	}
}
