package fleet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/api"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Dialer opens a connection to addr (host:port of the API server, or its
// host_aliases IP) through the SSH tier's tunnel; spoke/tunnel implements
// it. A Dialer must honour ctx's deadline.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Defaults of Options.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultRequestTimeout = 60 * time.Second
)

// Options bound a spoke client.
type Options struct {
	// ConnectTimeout bounds each step of reaching the API server: the
	// dial (through the proxy or tunnel), the proxy's CONNECT answer and
	// the TLS handshake. Zero is DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// RequestTimeout bounds every request, whole, its body included: a
	// silently dead tunnel cannot hang a poll. Zero is
	// DefaultRequestTimeout. Streams that outlive it are not for this
	// client (the Job runner polls log snapshots).
	RequestTimeout time.Duration
	// Dialer is the bastion tier's tunnel; required for that tier.
	Dialer Dialer
}

// RESTConfig builds a client config for cluster c from its kubeconfig's
// bytes (as the Hub secret delivers them), for one call: nothing is
// cached or global. It returns warnings (a bound, expiring token) beside
// the config. Every transport failure of a request made with the config
// is an *UnreachableError naming c and its tier.
//
// The path is the fleet file's alone: proxies from the environment
// (HTTPS_PROXY) are not used for spokes, and a kubeconfig proxy-url is
// used only when the block has no proxy_url of its own.
func RESTConfig(c *Cluster, kubeconfig []byte, o Options) (*rest.Config, []string, error) {
	cfg, warnings, err := restConfig(c, kubeconfig, o)
	// client-go quotes what it refuses ("invalid 'proxy-url' %q"), and
	// these errors reach the asking agent and the logs.
	return cfg, warnings, api.RedactError(err)
}

func restConfig(c *Cluster, kubeconfig []byte, o Options) (*rest.Config, []string, error) {
	o = c.Options(o)
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster %s: kubeconfig (secret %s): %w", c.Name, c.KubeconfigSecret, err)
	}
	if err := selfContained(kc); err != nil {
		return nil, nil, fmt.Errorf("cluster %s: kubeconfig (secret %s): %w", c.Name, c.KubeconfigSecret, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("cluster %s: kubeconfig (secret %s): %w", c.Name, c.KubeconfigSecret, err)
	}
	var warnings []string
	if w := boundTokenWarning(c.Name, cfg.BearerToken); w != "" {
		warnings = append(warnings, w)
	}
	apiURL, err := url.Parse(cfg.Host)
	if err != nil || apiURL.Host == "" || !strings.EqualFold(apiURL.Scheme, "https") {
		// Plain http would hand the token to whoever is on the path.
		// Not quoted: a malformed server string may hold credentials
		// (user:password@), and this error reaches the asking agent.
		return nil, nil, fmt.Errorf("cluster %s: kubeconfig (secret %s): the cluster's server is not an https URL with a host", c.Name, c.KubeconfigSecret)
	}
	tier := c.Tier()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster %s: kubeconfig TLS: %w", c.Name, err)
	}
	if tlsCfg != nil && tlsCfg.InsecureSkipVerify {
		// selfContained refused the kubeconfig field; this holds for any
		// other way client-go might come to skip verification.
		return nil, nil, fmt.Errorf("cluster %s: kubeconfig (secret %s): the API server's certificate must be verified", c.Name, c.KubeconfigSecret)
	}
	if tlsCfg != nil && tlsCfg.ServerName == "" {
		// The name the certificate is checked against is the real API
		// host on every tier, whatever address the bytes go to.
		tlsCfg.ServerName = apiURL.Hostname()
	}
	proxy := cfg.Proxy // the kubeconfig's proxy-url, if any
	if c.ProxyURL != "" {
		pu, _ := url.Parse(c.ProxyURL) // Validate checked it
		proxy = http.ProxyURL(pu)
	}
	dial := (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	if tier == TierBastion {
		if o.Dialer == nil {
			return nil, nil, fmt.Errorf("cluster %s: the bastion tier needs a tunnel (no Dialer given)", c.Name)
		}
		proxy = nil
		dial = o.Dialer.DialContext
	}
	aliases := c.HostAliases
	ct := o.ConnectTimeout
	dialAliased := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if ip, ok := aliases[host]; ok {
				addr = net.JoinHostPort(ip, port)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, ct)
		defer cancel()
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newConnectConn(conn, ct), nil
	}
	// Through a proxy, HTTP/1.1: HTTP/2's small frames meet a proxy that
	// leaves Nagle on (tinyproxy 1.11 does) and wait ~40 ms for a delayed
	// ACK each, a small GET 51.6 ms at p50 against 1.4 ms over HTTP/1.1
	// through the same proxy (docs/performance.md, bench/spoke).
	h2 := proxy == nil
	if !h2 && tlsCfg != nil {
		tlsCfg.NextProtos = []string{"http/1.1"}
	}
	tr := &http.Transport{
		Proxy:               proxy,
		DialContext:         dialAliased,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: ct,
		ForceAttemptHTTP2:   h2,
		// net/http's own error for a refused CONNECT is the bare reason
		// phrase ("Access violation"): say a proxy answered, which, and
		// with what status.
		OnProxyConnectResponse: proxyRefusal,
		MaxIdleConnsPerHost:    25,
		IdleConnTimeout:        90 * time.Second,
	}
	// A custom transport carries the TLS settings itself; client-go
	// refuses a config that has both.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Proxy = nil
	cfg.Dial = nil
	cfg.Transport = &unreachableRT{next: tr, cluster: c.Name, tier: tier, timeout: o.RequestTimeout}
	return cfg, warnings, nil
}

// proxyRefusal is the error of a proxy's CONNECT answer that is not 200:
// the proxy's address (never its userinfo), the target and the status.
func proxyRefusal(_ context.Context, proxyURL *url.URL, req *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	return fmt.Errorf("proxy %s refused CONNECT to %s: %s", proxyURL.Host, req.Host, resp.Status)
}

// connectConn bounds the connect phase: until the peer first speaks (the
// proxy's CONNECT answer, the server's TLS hello) reads and writes share
// one deadline, so a blackhole that accepts and never answers fails in
// ConnectTimeout instead of at the kernel's TCP timeout.
type connectConn struct {
	net.Conn
	once sync.Once
}

func newConnectConn(c net.Conn, d time.Duration) net.Conn {
	c.SetDeadline(time.Now().Add(d))
	return &connectConn{Conn: c}
}

func (c *connectConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.once.Do(func() { c.Conn.SetDeadline(time.Time{}) })
	}
	return n, err
}

// selfContained refuses a kubeconfig that reaches outside its own bytes
// or turns TLS verification off: an exec or auth-provider plugin would run
// a program on the broker, a file reference would read the broker's files,
// on behalf of whoever may write the Hub secret, and an unverified server
// would receive the spoke's token. A spoke kubeconfig embeds its CA, token or client
// certificate (docs/spokes.md).
func selfContained(kc *clientcmdapi.Config) error {
	for name, cl := range kc.Clusters {
		if cl.ProxyURL != "" {
			// Checked here, not by client-go, whose message quotes the
			// value (and names a bare user:password@ as its scheme).
			u, err := url.Parse(cl.ProxyURL)
			if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
				return fmt.Errorf("cluster %s: proxy-url %q is not an http://, https:// or socks5:// URL", name, api.RedactURL(cl.ProxyURL))
			}
		}
		switch {
		case cl.CertificateAuthority != "":
			return fmt.Errorf("cluster %s: a certificate-authority file is not allowed: embed certificate-authority-data", name)
		case cl.InsecureSkipTLSVerify:
			// The bearer token would go to any server that answers at the
			// address: a stale host_aliases IP, a hijacked route, the
			// proxy itself.
			return fmt.Errorf("cluster %s: insecure-skip-tls-verify is not allowed: the API server's certificate is always verified; embed its CA as certificate-authority-data", name)
		}
	}
	for name, u := range kc.AuthInfos {
		switch {
		case u.Exec != nil:
			return fmt.Errorf("user %s: an exec credential plugin is not allowed: embed a ServiceAccount token", name)
		case u.AuthProvider != nil:
			return fmt.Errorf("user %s: an auth-provider plugin is not allowed: embed a ServiceAccount token", name)
		case u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "":
			return fmt.Errorf("user %s: file references (client-certificate, client-key, tokenFile) are not allowed: embed the data", name)
		}
	}
	return nil
}
