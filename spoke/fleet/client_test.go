package fleet

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/internal/testenv/kube"
)

// kubeconfigFor is a kubeconfig as the Hub secret delivers it: one
// cluster, one user, the CA embedded.
func kubeconfigFor(server string, ca []byte, token, proxyURL string) []byte {
	proxy := ""
	if proxyURL != "" {
		proxy = "    proxy-url: " + proxyURL + "\n"
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: spoke
  cluster:
    server: %s
    certificate-authority-data: %s
%susers:
- name: sa
  user:
    token: %s
contexts:
- name: spoke
  context: {cluster: spoke, user: sa, namespace: default}
current-context: spoke
`, server, base64.StdEncoding.EncodeToString(ca), proxy, token)
}

func port(t *testing.T, c *kube.Cluster) string {
	u, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// version asks the spoke for /version with a client built for c.
func version(t *testing.T, c *Cluster, kc []byte, o Options) error {
	t.Helper()
	cfg, _, err := RESTConfig(c, kc, o)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err == nil && !strings.HasPrefix(v.GitVersion, "v1.") {
		return fmt.Errorf("version %+v", v)
	}
	return err
}

func TestPublicTierReachesVersion(t *testing.T) {
	kc := kube.Need(t)
	c := &Cluster{Name: "wharf", KubeconfigSecret: "W"}
	if err := version(t, c, kubeconfigFor(kc.URL, kc.CAPEM(), "scion-broker-token", ""), Options{}); err != nil {
		t.Fatal(err)
	}
}

// The DNS-dark tier: the kubeconfig names a host that resolves nowhere;
// the alias sends the bytes to 127.0.0.1 and the certificate is still
// checked against the name.
func TestHostAliasesTier(t *testing.T) {
	kc := kube.Need(t)
	if _, err := net.LookupHost(kube.DarkHost); err == nil {
		t.Fatalf("%s resolves here: the test would not show the alias at work", kube.DarkHost)
	}
	server := "https://" + net.JoinHostPort(kube.DarkHost, port(t, kc))
	kcb := kubeconfigFor(server, kc.CAPEM(), "scion-broker-token", "")
	if err := version(t, &Cluster{Name: "dark", KubeconfigSecret: "D"}, kcb, Options{ConnectTimeout: 2 * time.Second}); err == nil {
		t.Fatal("the dark host was reached without its alias")
	}
	c := &Cluster{Name: "dark", KubeconfigSecret: "D", HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"}}
	if err := version(t, c, kcb, Options{}); err != nil {
		t.Fatalf("through the alias: %v", err)
	}
	// A name that is not on the certificate, aliased to the same server:
	// verification must refuse it.
	other := "other.scion.invalid"
	wrong := &Cluster{Name: "dark", KubeconfigSecret: "D", HostAliases: map[string]string{other: "127.0.0.1"}}
	err := version(t, wrong, kubeconfigFor("https://"+net.JoinHostPort(other, port(t, kc)), kc.CAPEM(), "scion-broker-token", ""), Options{})
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "certificate") || ue.Tier != TierHostAliases {
		t.Fatalf("a name not on the certificate: %v", err)
	}
}

// The bastion tier through the Dialer seam: a stand-in for spoke/tunnel
// that forwards to the API server and records the address it was asked
// for (the real API host); TLS is checked against that host.
func TestBastionTierThroughDialer(t *testing.T) {
	kc := kube.Need(t)
	d := &forwardDialer{to: strings.TrimPrefix(kc.URL, "https://")}
	server := "https://" + net.JoinHostPort(kube.DarkHost, port(t, kc))
	c := &Cluster{Name: "b200", KubeconfigSecret: "B", Bastion: &Bastion{Host: "b", User: "u", KeySecret: "K", KnownHosts: knownHosts}}
	if _, _, err := RESTConfig(c, kubeconfigFor(server, kc.CAPEM(), "t", ""), Options{}); err == nil {
		t.Fatal("the bastion tier built a client without a tunnel")
	}
	if err := version(t, c, kubeconfigFor(server, kc.CAPEM(), "scion-broker-token", ""), Options{Dialer: d}); err != nil {
		t.Fatal(err)
	}
	if got := d.addrs(); len(got) == 0 || got[0] != net.JoinHostPort(kube.DarkHost, port(t, kc)) {
		t.Errorf("the tunnel was asked for %v, want the API host", got)
	}
}

type forwardDialer struct {
	to   string
	mu   sync.Mutex
	seen []string
}

func (d *forwardDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.seen = append(d.seen, addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.to)
}

func (d *forwardDialer) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

// The proxy tier against an in-test HTTP CONNECT proxy (a unit test of
// the client's proxy branch; the real tinyproxy is a later slice): the
// fleet's proxy_url wins over the kubeconfig's proxy-url.
func TestProxyTierInTestProxy(t *testing.T) {
	kc := kube.Need(t)
	p := startConnectProxy(t)
	dead := closedPort(t)
	c := &Cluster{Name: "pok", KubeconfigSecret: "P", ProxyURL: "http://" + p.addr}
	kcb := kubeconfigFor(kc.URL, kc.CAPEM(), "scion-broker-token", "http://"+dead)
	if err := version(t, c, kcb, Options{ConnectTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := p.targets(); len(got) == 0 || got[0] != strings.TrimPrefix(kc.URL, "https://") {
		t.Errorf("the proxy saw CONNECT %v", got)
	}
	// Without the fleet field the kubeconfig's (dead) proxy is used.
	err := version(t, &Cluster{Name: "pok", KubeconfigSecret: "P"}, kcb, Options{ConnectTimeout: 2 * time.Second})
	if !errors.As(err, new(*UnreachableError)) {
		t.Errorf("kubeconfig proxy-url to a closed port: %v", err)
	}
}

// A proxy that answers CONNECT with a refusal (tinyproxy's 403 for a
// port its ConnectPort lines do not allow) is named with its status in
// the typed error, not net/http's bare reason phrase; its userinfo is not.
func TestProxyRefusalNamesProxyAndStatus(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					io.WriteString(c, "HTTP/1.1 403 Access violation\r\nContent-Length: 0\r\n\r\n")
				}
			}()
		}
	}()
	c := &Cluster{Name: "pok", KubeconfigSecret: "P", ProxyURL: "http://user:hunter2@" + l.Addr().String()}
	err = version(t, c, kubeconfigFor("https://"+kube.DarkHost+":6443", nil, "scion-broker-token", ""), Options{ConnectTimeout: 2 * time.Second})
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Tier != TierProxy {
		t.Fatalf("got %v, want an UnreachableError of the proxy tier", err)
	}
	want := "proxy " + l.Addr().String() + " refused CONNECT to " + kube.DarkHost + ":6443: 403 Access violation"
	if !strings.Contains(ue.Message, want) || strings.Contains(ue.Message, "hunter2") {
		t.Errorf("message %q; want it to hold %q and no userinfo", ue.Message, want)
	}
}

// Every tier answers the typed error within the connect timeout, for a
// closed port and for a blackhole that accepts and never answers.
func TestUnreachableSpokeTypedErrorInTime(t *testing.T) {
	// Nothing answers, so no API server is needed; a CA of none is fine.
	var ca []byte
	const ct = time.Second
	closed, hole := closedPort(t), blackhole(t)
	_, holePort, _ := net.SplitHostPort(hole)
	_, closedP, _ := net.SplitHostPort(closed)
	bast := &Bastion{Host: "b", User: "u", KeySecret: "K", KnownHosts: knownHosts}
	hang := hangDialer{}
	for _, tc := range []struct {
		name   string
		c      Cluster
		server string
		o      Options
	}{
		{"public closed", Cluster{}, "https://" + closed, Options{}},
		{"public blackhole", Cluster{}, "https://" + hole, Options{}},
		{"host_aliases closed", Cluster{HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"}}, "https://" + net.JoinHostPort(kube.DarkHost, closedP), Options{}},
		{"host_aliases blackhole", Cluster{HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"}}, "https://" + net.JoinHostPort(kube.DarkHost, holePort), Options{}},
		{"proxy closed", Cluster{ProxyURL: "http://" + closed}, "https://" + kube.DarkHost + ":6443", Options{}},
		{"proxy blackhole", Cluster{ProxyURL: "http://" + hole}, "https://" + kube.DarkHost + ":6443", Options{}},
		{"bastion blackhole", Cluster{Bastion: bast}, "https://" + hole, Options{Dialer: &forwardDialer{to: hole}}},
		{"bastion tunnel hangs", Cluster{Bastion: bast}, "https://" + kube.DarkHost + ":6443", Options{Dialer: hang}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			c.Name, c.KubeconfigSecret = "spoke1", "K"
			o := tc.o
			o.ConnectTimeout = ct
			start := time.Now()
			err := version(t, &c, kubeconfigFor(tc.server, ca, "scion-broker-token", ""), o)
			took := time.Since(start)
			var ue *UnreachableError
			if !errors.As(err, &ue) || ue.Cluster != "spoke1" || ue.Tier != c.Tier() {
				t.Fatalf("got %v, want an UnreachableError of spoke1, tier %s", err, c.Tier())
			}
			if took > ct+time.Second { // slack for a loaded CI machine; the kernel's timeouts are minutes
				t.Errorf("answered in %v, connect timeout %v", took, ct)
			}
			t.Logf("%s: %v in %v", c.Tier(), ue.Message, took.Round(time.Millisecond))
		})
	}
}

// A real bound token (TokenRequest) is warned about; the fixture's static
// token is not.
func TestBoundTokenWarnedFromKubeconfig(t *testing.T) {
	kc := kube.Need(t)
	ns := kc.Namespace(t)
	ctx := context.Background()
	if _, err := kc.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "spoke"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kc.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "spoke", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Name: "wharf", KubeconfigSecret: "W"}
	_, warns, err := RESTConfig(c, kubeconfigFor(kc.URL, kc.CAPEM(), tr.Status.Token, ""), Options{})
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "cluster wharf") || !strings.Contains(warns[0], "expire") {
		t.Fatalf("bound token: warnings %q, %v", warns, err)
	}
	if _, warns, _ := RESTConfig(c, kubeconfigFor(kc.URL, kc.CAPEM(), "scion-broker-token", ""), Options{}); len(warns) != 0 {
		t.Errorf("static token warned: %q", warns)
	}
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// blackhole accepts connections and never writes a byte.
func blackhole(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

// hangDialer is a tunnel that never connects until its context ends.
type hangDialer struct{}

func (hangDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

type connectProxy struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func (p *connectProxy) targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// startConnectProxy is a minimal HTTP CONNECT proxy on loopback.
func startConnectProxy(t *testing.T) *connectProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &connectProxy{addr: l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *connectProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		return
	}
	p.mu.Lock()
	p.seen = append(p.seen, req.Host)
	p.mu.Unlock()
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	go io.Copy(up, br)
	io.Copy(c, up)
}

// A spoke that connects and then never answers (a tunnel frozen after
// the handshake) is bounded by the request timeout, with the typed error.
func TestFrozenSpokeBoundedByRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	const rt = time.Second
	start := time.Now()
	err := version(t, &Cluster{Name: "wharf", KubeconfigSecret: "W"}, kubeconfigFor(srv.URL, ca, "t", ""), Options{RequestTimeout: rt})
	took := time.Since(start)
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Message, "request timeout") {
		t.Fatalf("got %v, want an UnreachableError naming the request timeout", err)
	}
	if took < rt || took > rt+time.Second {
		t.Errorf("answered in %v, request timeout %v", took, rt)
	}
}

// TestBadServerNotQuoted: a kubeconfig whose server is not a URL is
// refused without quoting it (a mangled server string may carry a
// password, and the error reaches the agent that asked for the Job).
func TestBadServerNotQuoted(t *testing.T) {
	c := &Cluster{Name: "wharf", KubeconfigSecret: "K"}
	for _, server := range []string{"https://admin:hunter2-secret@", "hunter2-secret"} {
		_, _, err := RESTConfig(c, kubeconfigFor(server, []byte("ca"), "tok", ""), Options{})
		if err == nil {
			t.Fatalf("%s: accepted", server)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("the error quotes the server: %v", err)
		}
	}
}
