package connect

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	testsshd "github.com/scion-go/scion/internal/testenv/sshd"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/tunnel"
)

// kubeconfig is a spoke kubeconfig as the Hub secret delivers it (CA
// embedded), its context in namespace ns ("" for none).
func kubeconfig(server string, ca []byte, token, ns string) string {
	nsLine := ""
	if ns != "" {
		nsLine = ", namespace: " + ns
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: spoke
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: sa
  user:
    token: %s
contexts:
- name: spoke
  context: {cluster: spoke, user: sa%s}
current-context: spoke
`, server, base64.StdEncoding.EncodeToString(ca), token, nsLine)
}

// secretMap is a Secrets over a map, counting reads; a missing name is
// the Hub's secret_not_found.
type secretMap map[string]string

func (m secretMap) get(_ context.Context, name string) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", api.Errorf(api.CodeSecretNotFound, "secret %s not found", name)
	}
	return v, nil
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestOpenPublicTier: the fixture through the public tier: a ConfigMap
// written in the resolved namespace with the spoke's clients, and the
// namespace rule (block, else context, else default).
func TestOpenPublicTier(t *testing.T) {
	kc := kube.Need(t)
	ns := kc.Namespace(t)
	p := NewPool(fleet.Options{}, nil)
	defer p.Close()
	for _, tc := range []struct {
		name, block, context, want string
	}{
		{"block wins", ns, "elsewhere", ns},
		{"context", "", ns, ns},
		{"neither", "", "", DefaultNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fleet.Cluster{Name: "pub", KubeconfigSecret: "PUB_KC", Namespace: tc.block}
			s, err := p.Open(ctxT(t), c, secretMap{"PUB_KC": kubeconfig(kc.URL, kc.CAPEM(), kc.Admin.BearerToken, tc.context)}.get)
			if err != nil {
				t.Fatal(err)
			}
			if s.Tier != fleet.TierPublic || s.Name() != "pub" || s.Namespace != tc.want || len(s.Warnings) != 0 {
				t.Fatalf("spoke %+v", s)
			}
			if tc.want != ns {
				return
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strings.ReplaceAll(tc.name, " ", "-")}}
			if _, err := s.Clients.Kube.CoreV1().ConfigMaps(s.Namespace).Create(ctxT(t), cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
			if _, err := s.Clients.Dynamic.Resource(gvr).Namespace(s.Namespace).Get(ctxT(t), cm.Name, metav1.GetOptions{}); err != nil {
				t.Fatalf("dynamic client: %v", err)
			}
		})
	}
	if p.Tunnels() != 0 {
		t.Errorf("the public tier made %d tunnels", p.Tunnels())
	}
}

// TestOpenSecretErrors: a missing secret is the Secrets error, wrapped
// (secret_not_found stays an *api.Error) and naming the cluster; a bad
// kubeconfig's error does not carry the secret's value.
func TestOpenSecretErrors(t *testing.T) {
	p := NewPool(fleet.Options{}, nil)
	defer p.Close()
	c := &fleet.Cluster{Name: "pub", KubeconfigSecret: "MISSING"}
	_, err := p.Open(ctxT(t), c, secretMap{}.get)
	if e := api.AsError(err); e == nil || e.Code != api.CodeSecretNotFound || !strings.Contains(err.Error(), "cluster pub") {
		t.Fatalf("missing kubeconfig secret: %v", err)
	}
	b := &fleet.Cluster{Name: "b", KubeconfigSecret: "KC", Bastion: &fleet.Bastion{Host: "b", User: "u", KeySecret: "KEY", KnownHosts: "b ssh-ed25519 AAAA"}}
	_, err = p.Open(ctxT(t), b, secretMap{"KC": "x"}.get)
	if e := api.AsError(err); e == nil || e.Code != api.CodeSecretNotFound || !strings.Contains(err.Error(), "bastion key secret KEY") {
		t.Fatalf("missing key secret: %v", err)
	}
	const value = "hunter2-sekrit"
	for _, kcb := range []string{"token: " + value + " {{ not yaml", "apiVersion: v1\nkind: Config\nclusters: " + value} {
		_, err = p.Open(ctxT(t), c, secretMap{"MISSING": kcb}.get)
		if err == nil || strings.Contains(err.Error(), value) {
			t.Fatalf("bad kubeconfig: %v", err)
		}
	}
	_, err = p.Open(ctxT(t), b, secretMap{"KC": "x", "KEY": "-----BEGIN " + value}.get)
	if err == nil || strings.Contains(err.Error(), value) {
		t.Fatalf("bad key: %v", err)
	}
}

// TestAmbient: the broker's own cluster is "ambient" on tier "ambient".
func TestAmbient(t *testing.T) {
	kc := kube.Need(t)
	s, err := NewPool(fleet.Options{}, nil).Ambient(kc.Admin, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != AmbientCluster || s.Tier != TierAmbient || s.Namespace != DefaultNamespace || s.Cluster != nil {
		t.Fatalf("ambient %+v", s)
	}
	if _, err := s.Clients.Kube.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
}

// TestTunnelKey: every part of a tunnel changes its key.
func TestTunnelKey(t *testing.T) {
	base := func() *fleet.Cluster {
		return &fleet.Cluster{Name: "b", Bastion: &fleet.Bastion{Host: "h", User: "u", KnownHosts: "h ssh-ed25519 AAAA"}}
	}
	k0 := tunnelKey(base(), []byte("key"))
	if tunnelKey(base(), []byte("key")) != k0 {
		t.Fatal("not deterministic")
	}
	for name, edit := range map[string]func(*fleet.Cluster){
		"name":        func(c *fleet.Cluster) { c.Name = "c" },
		"host":        func(c *fleet.Cluster) { c.Bastion.Host = "h:2222" },
		"user":        func(c *fleet.Cluster) { c.Bastion.User = "v" },
		"known_hosts": func(c *fleet.Cluster) { c.Bastion.KnownHosts = "h ssh-ed25519 AAAB" },
	} {
		c := base()
		edit(c)
		if tunnelKey(c, []byte("key")) == k0 {
			t.Errorf("%s: same key", name)
		}
	}
	if tunnelKey(base(), []byte("key2")) == k0 {
		t.Error("private key: same key")
	}
	if strings.Contains(k0, "key") {
		t.Error("the key is in the map key")
	}
}

func apiPort(t *testing.T, kc *kube.Cluster) string {
	u, err := url.Parse(kc.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestBastionTierRealSSHD: the fixture behind Debian's sshd. The
// kubeconfig names a host that resolves nowhere; the block's host_aliases
// name the address the bastion dials; TLS is checked against the host.
// The pool reuses the tunnel for the same key (one login for two Opens),
// makes a new one for a rotated key (the old spoke's client carries on
// over it), and a changed known_hosts line is a new tunnel that refuses
// the bastion.
func TestBastionTierRealSSHD(t *testing.T) {
	kc := kube.Need(t)
	k1, pem1 := testsshd.NewKey(t)
	k2, pem2 := testsshd.NewKey(t)
	srv := testsshd.Start(t, k1.PublicKey(), k2.PublicKey())
	server := "https://" + net.JoinHostPort(kube.DarkHost, apiPort(t, kc))
	c := &fleet.Cluster{Name: "b200", KubeconfigSecret: "B200_KC",
		HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"},
		Bastion:     &fleet.Bastion{Host: srv.Addr, User: testsshd.User(t), KeySecret: "B200_KEY", KnownHosts: srv.KnownHosts()}}
	if err := c.Validate("test"); err != nil {
		t.Fatal(err)
	}
	secrets := secretMap{"B200_KC": kubeconfig(server, kc.CAPEM(), kc.Admin.BearerToken, ""), "B200_KEY": string(pem1)}
	p := NewPool(fleet.Options{ConnectTimeout: 3 * time.Second}, nil)
	defer p.Close()
	logins := func() int { return strings.Count(srv.Log.String(), "Accepted publickey") }

	s1, err := p.Open(ctxT(t), c, secrets.get)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Tier != fleet.TierBastion {
		t.Fatalf("tier %s", s1.Tier)
	}
	version := func(s *Spoke) error {
		_, err := s.Clients.Kube.Discovery().ServerVersion()
		return err
	}
	if err := version(s1); err != nil {
		t.Fatal(err)
	}
	s2, err := p.Open(ctxT(t), c, secrets.get)
	if err != nil {
		t.Fatal(err)
	}
	if err := version(s2); err != nil {
		t.Fatal(err)
	}
	if n := logins(); n != 1 || p.Tunnels() != 1 {
		t.Fatalf("two Opens with one key: %d logins, %d tunnels, want 1, 1", n, p.Tunnels())
	}

	// A rotated key: a new tunnel (a second login, with the new key); the
	// first spoke's client reaches the API server through it.
	secrets["B200_KEY"] = string(pem2)
	if _, err := p.Open(ctxT(t), c, secrets.get); err != nil {
		t.Fatal(err)
	}
	// Its pooled connection died with the old tunnel: a request that
	// raced the transport's noticing fails typed (the runner retries), and
	// the next ones go through the new tunnel.
	deadline := time.Now().Add(10 * time.Second)
	for err := version(s1); err != nil; err = version(s1) {
		var ue *fleet.UnreachableError
		if !errors.As(err, &ue) || time.Now().After(deadline) {
			t.Fatalf("the old spoke after the rotation: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling: the transport drops the dead connection
	}
	if n := logins(); n != 2 || p.Tunnels() != 1 || !strings.Contains(srv.Log.String(), strings.TrimPrefix(fingerprint(k2), "SHA256:")) {
		t.Fatalf("after the rotation: %d logins, %d tunnels; log:\n%s", n, p.Tunnels(), srv.Log.String())
	}

	// A known_hosts line that pins another key: a new tunnel, refused.
	other, _ := testsshd.NewKey(t)
	c2 := *c
	b2 := *c.Bastion
	b2.KnownHosts = testsshd.KnownHostsLine(srv.Addr, other.PublicKey())
	c2.Bastion = &b2
	s3, err := p.Open(ctxT(t), &c2, secrets.get)
	if err != nil {
		t.Fatal(err)
	}
	err = version(s3)
	var ue *fleet.UnreachableError
	if !errors.As(err, &ue) || ue.Tier != fleet.TierBastion || ue.Cluster != "b200" || !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("a changed known_hosts: %v", err)
	}

	p.Close()
	if _, err := p.Open(ctxT(t), c, secrets.get); err == nil {
		t.Fatal("Open after Close")
	}
	if err := version(s1); err == nil {
		t.Fatal("a spoke's client dialled after Close")
	}
}

func fingerprint(s interface{ PublicKey() ssh.PublicKey }) string {
	return ssh.FingerprintSHA256(s.PublicKey())
}

// TestSameNameBastionsKeepTheirTunnels: a profile may override a file
// block of the same name with another bastion (its own spoke). The pool
// kept one tunnel per cluster name, so opening one closed the other's
// tunnel and the other's Jobs dialled through the wrong bastion with its
// key: each bastion (address, user, key secret) keeps its own tunnel, and
// opening one again replaces nothing.
func TestSameNameBastionsKeepTheirTunnels(t *testing.T) {
	_, pem := testsshd.NewKey(t)
	hk, _ := testsshd.NewKey(t)
	block := func(addr, keySecret string) *fleet.Cluster {
		c := &fleet.Cluster{Name: "b200", KubeconfigSecret: "KC",
			Bastion: &fleet.Bastion{Host: addr, User: "u", KeySecret: keySecret, KnownHosts: testsshd.KnownHostsLine(addr, hk.PublicKey())}}
		if err := c.Validate("test"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	file, profile := block("127.0.0.1:2201", "KEY_A"), block("127.0.0.1:2202", "KEY_B")
	secrets := secretMap{"KC": kubeconfig("https://api.example:6443", nil, "t", ""), "KEY_A": string(pem), "KEY_B": string(pem)}
	p := NewPool(fleet.Options{}, nil)
	defer p.Close()
	held := func() map[*tunnel.Tunnel]bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		m := map[*tunnel.Tunnel]bool{}
		for _, h := range p.tunnels {
			m[h.t] = true
		}
		return m
	}
	var first map[*tunnel.Tunnel]bool
	for i, c := range []*fleet.Cluster{file, profile, file, profile} {
		if _, err := p.Open(ctxT(t), c, secrets.get); err != nil {
			t.Fatal(err)
		}
		if want := min(i+1, 2); p.Tunnels() != want {
			t.Fatalf("after Open %d: %d tunnels, want %d", i+1, p.Tunnels(), want)
		}
		if i == 1 {
			first = held()
		}
	}
	if !maps.Equal(first, held()) {
		t.Error("opening a block again replaced a tunnel")
	}
}

// TestAmbientRequestsAreBounded: the broker's own cluster is polled for
// as long as a Job waits in its queue; an API server that accepts and
// never answers held a status poll (and the Job's follow) for ever, since
// the runtime's config sets no timeout. The pool bounds its requests as
// it bounds every spoke's.
func TestAmbientRequestsAreBounded(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answers nothing
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hold)
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	s, err := NewPool(fleet.Options{ConnectTimeout: 300 * time.Millisecond, RequestTimeout: 500 * time.Millisecond}, nil).Ambient(cfg, "ns")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = s.Clients.Kube.BatchV1().Jobs("ns").Get(ctx, "scion-job-x", metav1.GetOptions{})
	if err == nil || ctx.Err() != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a poll of a silent ambient API server: %v after %v", err, time.Since(start))
	}
	if cfg.Timeout != 0 {
		t.Error("the runtime's own config was changed")
	}
}
