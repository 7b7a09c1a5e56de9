package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/testenv/sshd"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/tunnel"
)

// proxyTier downloads over HTTPS through spoke/fleet's own transport
// (fleet.RESTConfig, as a spoke client gets it) on three tiers: public
// (a direct connection), proxy (CONNECT through tinyproxy) and bastion
// (spoke/tunnel through sshd), and then measures a small GET's latency on
// each. The source is an HTTPS server on loopback speaking HTTP/2, as an
// API server does.
func proxyTier(dir string, rounds, per int, size int64, latencyN int, h1, kubeToo bool) error {
	chunk := make([]byte, 256<<10)
	src := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/blob" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		for left := size; left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				return
			}
		}
	}))
	src.EnableHTTP2 = !h1
	src.Config.ErrorLog = log.New(io.Discard, "", 0)
	src.StartTLS()
	defer src.Close()
	_, port, _ := net.SplitHostPort(src.Listener.Addr().String())
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: src.Certificate().Raw})
	kc := kubeconfig(src.URL, ca, "bench-token")

	p, err := startProxy(dir, port)
	if err != nil {
		return err
	}
	defer p.stop()

	// The bastion tier: sshd and a tunnel, as spoke/connect builds them.
	bin, err := sshd.Binary()
	if err != nil {
		return fmt.Errorf("no sshd (apt-get install openssh-server): %w", err)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	sdir, err := os.MkdirTemp(dir, "ssh")
	if err != nil {
		return err
	}
	srv, err := sshd.Launch(bin, sdir, key.PublicKey())
	if err != nil {
		return err
	}
	defer srv.Stop()
	u, err := user.Current()
	if err != nil {
		return err
	}
	tun, err := tunnel.New(tunnel.Config{Host: srv.Addr, User: u.Username, PrivateKey: keyPEM, KnownHosts: srv.KnownHosts()})
	if err != nil {
		return err
	}
	defer tun.Close()

	b := bastion{addr: srv.Addr, user: u.Username, knownHosts: srv.KnownHosts(), tun: tun}
	tiers, err := tierClients(kc, p, b)
	if err != nil {
		return err
	}
	var arms []arm
	for _, tc := range tiers {
		arms = append(arms, arm{name: tc.name, note: tc.via, get: func(ctx context.Context) (int64, error) {
			return fetch(ctx, tc.hc, src.URL+"/blob")
		}})
	}
	title := "HTTPS (HTTP/2) download through spoke/fleet's transport, by tier"
	if !src.EnableHTTP2 {
		title = "HTTPS (HTTP/1.1, -h1) download through spoke/fleet's transport, by tier"
	}
	if err := compare(title, arms, rounds, per, size); err != nil {
		return err
	}
	diag, err := proxyH1(p, ca)
	if err != nil {
		return err
	}
	if err := latency("the loopback HTTPS source, GET /api", withH1(tiers, diag), src.URL+"/api", latencyN); err != nil {
		return err
	}
	if !kubeToo {
		return nil
	}
	return kubeLatency(dir, b, latencyN)
}

// bastion is the SSH tier's sshd and the tunnel through it.
type bastion struct {
	addr, user, knownHosts string
	tun                    *tunnel.Tunnel
}

// tierClient is an HTTP client with spoke/fleet's transport for one tier.
type tierClient struct {
	name, via string
	hc        *http.Client
}

// tierClients builds the proxy, bastion and public tiers' clients for the
// API server of kubeconfig kc, with fleet.RESTConfig as a spoke client
// gets them (public last: it is the baseline).
func tierClients(kc []byte, p *proxyProc, b bastion) ([]tierClient, error) {
	tiers := []struct {
		name, via string
		c         *fleet.Cluster
		o         fleet.Options
	}{
		{"proxy", "CONNECT through " + p.version, &fleet.Cluster{Name: "proxied", KubeconfigSecret: "K", ProxyURL: p.url}, fleet.Options{}},
		{"bastion", "spoke/tunnel through sshd", &fleet.Cluster{Name: "tunnelled", KubeconfigSecret: "K",
			Bastion: &fleet.Bastion{Host: b.addr, User: b.user, KeySecret: "B", KnownHosts: b.knownHosts}},
			fleet.Options{Dialer: b.tun}},
		{"public", "direct TCP", &fleet.Cluster{Name: "direct", KubeconfigSecret: "K"}, fleet.Options{}},
	}
	var out []tierClient
	for _, tr := range tiers {
		if got := tr.c.Tier(); string(got) != tr.name {
			return nil, fmt.Errorf("cluster %s is on tier %s, want %s", tr.c.Name, got, tr.name)
		}
		cfg, _, err := fleet.RESTConfig(tr.c, kc, tr.o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tr.name, err)
		}
		out = append(out, tierClient{name: tr.name, via: tr.via, hc: &http.Client{Transport: cfg.Transport}})
	}
	return out, nil
}

// proxyH1 is a diagnostic, not a tier: the same proxy with a plain
// HTTP/1.1 transport (not spoke/fleet's, which forces HTTP/2), to tell
// the proxy's own cost from its interplay with HTTP/2's small writes.
func proxyH1(p *proxyProc, caPEM []byte) (tierClient, error) {
	pu, err := url.Parse(p.url)
	if err != nil {
		return tierClient{}, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return tierClient{}, fmt.Errorf("no CA certificate")
	}
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: roots},
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	return tierClient{name: "proxy, HTTP/1.1 (diagnostic)", via: p.version, hc: &http.Client{Transport: tr}}, nil
}

// withH1 puts the diagnostic before the baseline (public, last).
func withH1(tiers []tierClient, h1 tierClient) []tierClient {
	out := slices.Clone(tiers[:len(tiers)-1])
	return append(out, h1, tiers[len(tiers)-1])
}

// kubeLatency is latency against the kube-apiserver fixture
// (internal/testenv/kube; .ci/kube-apiserver.sh builds it), started only
// now so that it does not load the machine during the downloads.
func kubeLatency(dir string, b bastion, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := kube.Start(ctx)
	if err != nil {
		fmt.Printf("\nkube-apiserver latency skipped: %v\n", err)
		return nil
	}
	defer kc.Stop()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(kc.URL, "https://"))
	if err != nil {
		return err
	}
	pdir, err := os.MkdirTemp(dir, "kproxy")
	if err != nil {
		return err
	}
	p, err := startProxy(pdir, port)
	if err != nil {
		return err
	}
	defer p.stop()
	tiers, err := tierClients(kubeconfig(kc.URL, kc.CAPEM(), kc.Admin.BearerToken), p, b)
	if err != nil {
		return err
	}
	diag, err := proxyH1(p, kc.CAPEM())
	if err != nil {
		return err
	}
	return latency("kube-apiserver "+kube.Version+", GET /version", withH1(tiers, diag), kc.URL+"/version", n)
}

func fetch(ctx context.Context, hc *http.Client, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return readAll(resp.Body)
}

// latency runs n small GETs of url per tier on kept-alive connections,
// the tiers taking turns one request at a time (in reverse order every
// other turn), and prints p50 and p99, the last tier the baseline.
func latency(title string, tiers []tierClient, url string, n int) error {
	d := make([][]time.Duration, len(tiers))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range tiers { // connections up
		if _, err := fetch(ctx, tc.hc, url); err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
	}
	for i := range n {
		for j := range tiers {
			k := j
			if i%2 == 1 {
				k = len(tiers) - 1 - j
			}
			start := time.Now()
			if _, err := fetch(ctx, tiers[k].hc, url); err != nil {
				return fmt.Errorf("%s: %w", tiers[k].name, err)
			}
			d[k] = append(d[k], time.Since(start))
		}
	}
	fmt.Printf("\nsmall GET latency, %s, %d per tier, alternated, kept-alive connections (loadavg after: %s)\n", title, n, loadavg())
	fmt.Printf("| tier | p50 | p99 | p50 ratio to %s |\n|---|---|---|---|\n", tiers[len(tiers)-1].name)
	pct := func(v []time.Duration, q float64) time.Duration {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	base := pct(d[len(d)-1], 0.5)
	for i, tc := range tiers {
		fmt.Printf("| %s | %v | %v | %.2fx |\n", tc.name, pct(d[i], 0.5).Round(time.Microsecond),
			pct(d[i], 0.99).Round(time.Microsecond), float64(pct(d[i], 0.5))/float64(base))
	}
	return nil
}

// kubeconfig is a self-contained kubeconfig for server, as a Hub secret
// holds one (embedded CA, a token).
func kubeconfig(server string, ca []byte, token string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, server, base64.StdEncoding.EncodeToString(ca), token)
}
