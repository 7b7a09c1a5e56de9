package main

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"slices"
	"strconv"
	"time"

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
func proxyTier(dir string, rounds, per int, size int64, latencyN int, h1 bool) error {
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
	kc := kubeconfig(src.URL, ca)

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

	client := func(c *fleet.Cluster, o fleet.Options) (*http.Client, error) {
		cfg, _, err := fleet.RESTConfig(c, kc, o)
		if err != nil {
			return nil, err
		}
		return &http.Client{Transport: cfg.Transport}, nil
	}
	tiers := []struct {
		name, via string
		c         *fleet.Cluster
		o         fleet.Options
	}{
		{"proxy", "CONNECT through " + p.version, &fleet.Cluster{Name: "proxied", KubeconfigSecret: "K", ProxyURL: p.url}, fleet.Options{}},
		{"bastion", "spoke/tunnel through sshd", &fleet.Cluster{Name: "tunnelled", KubeconfigSecret: "K",
			Bastion: &fleet.Bastion{Host: srv.Addr, User: u.Username, KeySecret: "B", KnownHosts: srv.KnownHosts()}},
			fleet.Options{Dialer: tun}},
		{"public", "direct TCP", &fleet.Cluster{Name: "direct", KubeconfigSecret: "K"}, fleet.Options{}},
	}
	var arms []arm
	var gets []func(context.Context) (time.Duration, error)
	for _, tr := range tiers {
		hc, err := client(tr.c, tr.o)
		if err != nil {
			return fmt.Errorf("%s: %w", tr.name, err)
		}
		if got := tr.c.Tier(); string(got) != tr.name {
			return fmt.Errorf("cluster %s is on tier %s, want %s", tr.c.Name, got, tr.name)
		}
		arms = append(arms, arm{name: tr.name, note: tr.via, get: func(ctx context.Context) (int64, error) {
			return fetch(ctx, hc, src.URL+"/blob")
		}})
		gets = append(gets, func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			_, err := fetch(ctx, hc, src.URL+"/api")
			return time.Since(start), err
		})
	}
	title := "HTTPS (HTTP/2) download through spoke/fleet's transport, by tier"
	if !src.EnableHTTP2 {
		title = "HTTPS (HTTP/1.1, -h1) download through spoke/fleet's transport, by tier"
	}
	if err := compare(title, arms, rounds, per, size); err != nil {
		return err
	}
	names := []string{tiers[0].name, tiers[1].name, tiers[2].name}
	return latency(names, gets, latencyN)
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

// latency runs n small GETs per tier on kept-alive connections, the tiers
// taking turns one request at a time, and prints p50 and p99.
func latency(names []string, gets []func(context.Context) (time.Duration, error), n int) error {
	d := make([][]time.Duration, len(gets))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range n {
		for j := range gets {
			k := j
			if i%2 == 1 {
				k = len(gets) - 1 - j
			}
			v, err := gets[k](ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", names[k], err)
			}
			d[k] = append(d[k], v)
		}
	}
	fmt.Printf("\nsmall GET (%d per tier, alternated), kept-alive connection (loadavg after: %s)\n", n, loadavg())
	fmt.Printf("| tier | p50 | p99 | p50 ratio to public |\n|---|---|---|---|\n")
	pct := func(v []time.Duration, q float64) time.Duration {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	base := pct(d[len(d)-1], 0.5)
	for i := range d {
		fmt.Printf("| %s | %v | %v | %.2fx |\n", names[i], pct(d[i], 0.5).Round(time.Microsecond),
			pct(d[i], 0.99).Round(time.Microsecond), float64(pct(d[i], 0.5))/float64(base))
	}
	return nil
}

// kubeconfig is a self-contained kubeconfig for server, as a Hub secret
// holds one (embedded CA, a token).
func kubeconfig(server string, ca []byte) []byte {
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
    token: bench-token
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, server, base64.StdEncoding.EncodeToString(ca))
}
