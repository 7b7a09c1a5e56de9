package fleet

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/config"
)

// The secrets in the URLs of the tests below: none may appear in an
// error (a user that is a token is as secret as a password).
const urlSecret, urlUser = "hunter2", "tokenuser"

func noURLSecret(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if s := err.Error(); strings.Contains(s, urlSecret) || strings.Contains(s, urlUser) {
		t.Errorf("%s: the URL's userinfo is in the error: %s", what, s)
	}
}

// Every error path of a fleet file and a profile's blocks (decode,
// validate) with credentials in each URL-bearing field: the password
// and user never appear, the rest of the message does.
func TestFleetErrorsRedactURLUserinfo(t *testing.T) {
	ok := `kubeconfig_secret = "K"` + "\n"
	cred := urlUser + ":" + urlSecret + "@"
	for _, tc := range []struct{ name, doc, want string }{
		{"proxy scheme", "[clusters.x]\n" + ok + `proxy_url = "ftp://` + cred + `p:3128"` + "\n", `clusters.x.proxy_url: "ftp://***@p:3128" is not an http:// or https:// proxy URL`},
		{"proxy without scheme", "[clusters.x]\n" + ok + `proxy_url = "` + cred + `p:3128"` + "\n", `clusters.x.proxy_url: "***@p:3128" is not`},
		{"proxy that does not parse", "[clusters.x]\n" + ok + `proxy_url = "http://` + urlUser + `:hun ter2@p:3128"` + "\n", "clusters.x.proxy_url"},
		{"proxy beside a bastion", "[clusters.x]\n" + ok + `proxy_url = "http://` + cred + `p:3128"` + "\n[clusters.x.bastion]\nhost = \"b\"\nuser = \"u\"\nkey_secret = \"KEY\"\nknown_hosts = \"" + knownHosts + "\"\n", "cannot be combined with a bastion block"},
		{"bastion host", "[clusters.x]\n" + ok + "[clusters.x.bastion]\nhost = \"" + cred + "b\"\nuser = \"u\"\nkey_secret = \"KEY\"\nknown_hosts = \"" + knownHosts + "\"\n", "clusters.x.bastion.host"},
		{"alias host", "[clusters.x]\n" + ok + `host_aliases = { "` + cred + `api.x" = "10.0.0.1" }` + "\n", "clusters.x.host_aliases"},
		{"alias address", "[clusters.x]\n" + ok + `host_aliases = { "api.x" = "http://` + cred + `10.0.0.1" }` + "\n", "clusters.x.host_aliases"},
		{"duration", "[clusters.x]\n" + ok + `connect_timeout = "http://` + cred + `p"` + "\n", "connect_timeout"},
		{"unterminated value", "[clusters.x]\n" + ok + `proxy_url = "http://` + cred + "p:3128\n", "f.toml"},
		{"a value of the wrong type", "[clusters.x]\n" + ok + `proxy_url = ["http://` + cred + `p:3128"]` + "\n", "f.toml"},
		{"cluster name", `[clusters."http://` + cred + `x"]` + "\n" + ok, "the cluster name is not a DNS label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.toml", []byte(tc.doc))
			noURLSecret(t, tc.name, err)
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q in it", err, tc.want)
			}
		})
	}
	t.Run("profile blocks", func(t *testing.T) {
		f := &Fleet{Clusters: map[string]*Cluster{}}
		for _, s := range []config.ClusterSettings{
			{KubeconfigSecret: "K", ProxyURL: "ftp://" + cred + "p:3128"},
			{KubeconfigSecret: "K", RequestTimeout: "http://" + cred + "p"},
			{KubeconfigSecret: "K", Bastion: &config.BastionSettings{Host: cred + "b", User: "u", KeySecret: "KEY", KnownHosts: knownHosts, KeepaliveInterval: "https://" + cred + "b"}},
		} {
			_, err := f.ForProfile(config.ProfileSettings{Name: "gpu", Clusters: map[string]config.ClusterSettings{"x": s}}, "settings.yaml")
			noURLSecret(t, "profile block", err)
		}
	})
}

// The kubeconfig's URLs (its server, its proxy-url) through RESTConfig
// and a request: client-go quotes what it refuses.
func TestKubeconfigErrorsRedactURLUserinfo(t *testing.T) {
	cred := urlUser + ":" + urlSecret + "@"
	c := &Cluster{Name: "wharf", KubeconfigSecret: "W"}
	for name, kc := range map[string][]byte{
		"proxy-url scheme":    kubeconfigFor("https://api.x:6443", []byte("ca"), "t", "ftp://"+cred+"p:3128"),
		"proxy-url bare":      kubeconfigFor("https://api.x:6443", []byte("ca"), "t", cred+"p:3128"),
		"server with a space": kubeconfigFor("https://"+cred+"api .x:6443", []byte("ca"), "t", ""),
		"server not https":    kubeconfigFor("http://"+cred+"api.x:6443", []byte("ca"), "t", ""),
	} {
		_, _, err := RESTConfig(c, kc, Options{})
		noURLSecret(t, name, err)
	}
	// A request that fails through the kubeconfig's own proxy, and one
	// to a server whose URL carries userinfo: the typed error's text and
	// client-go's wrapping of it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	srv := newImpostor(t) // its certificate serves as a CA that loads
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, kc := range map[string][]byte{
		"through a proxy":        kubeconfigFor("https://api.x:6443", ca, "t", "http://"+cred+closed),
		"server with userinfo":   kubeconfigFor("https://"+cred+closed, ca, "t", ""),
		"block proxy with creds": kubeconfigFor("https://api.x:6443", ca, "t", ""),
	} {
		c := c
		if name == "block proxy with creds" {
			c = &Cluster{Name: "wharf", KubeconfigSecret: "W", ProxyURL: "http://" + cred + closed}
		}
		cfg, _, err := RESTConfig(c, kc, Options{ConnectTimeout: time.Second, RequestTimeout: 2 * time.Second})
		if err != nil {
			noURLSecret(t, name, err)
			continue
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.Discovery().RESTClient().Get().AbsPath("/version").Do(context.Background()).Raw()
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(ue.Error(), urlSecret) || strings.Contains(ue.Error(), urlUser) {
			t.Errorf("%s: the typed error: %s", name, ue.Error())
		}
	}
}
