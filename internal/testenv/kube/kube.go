// Package kube starts a real Kubernetes API server for tests: etcd from
// the distribution and a kube-apiserver built from k8s.io/kubernetes by the
// separate module in internal/testenv/kubeapiserver (see
// .ci/kube-apiserver.sh, which builds and caches it). A Cluster has no
// kubelet, scheduler or controller-manager: objects are stored, validated,
// admitted and authorized exactly as on a real cluster, but pods stay
// Pending and nothing garbage-collects. A Spoke (StartSpoke, SpokeMain,
// NeedSpoke) adds kube-controller-manager, kwok as the kubelet of one fake
// node and Kueue's CRDs, so that Jobs run, log and finish
// (docs/spokes.md, "Test fixtures").
//
// A test package starts one Cluster in TestMain and shares it; each test
// works in a namespace of its own (Cluster.Namespace). Need(t) skips a test
// when the binaries are missing, except under CI=true, where it fails: a
// system test whose real part is missing must not pass unnoticed.
package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Version is the Kubernetes release the fixture module builds; the cached
// binary's directory is named after it.
const Version = "v1.37.2"

// Cluster is a running etcd plus kube-apiserver.
type Cluster struct {
	// URL is the API server's https address on loopback.
	URL string
	// Admin is a client config of a member of system:masters.
	Admin *rest.Config
	// Client is a clientset for Admin.
	Client kubernetes.Interface

	dir     string
	caPEM   []byte
	etcd    *process
	api     *process
	apiArgs []string
	nsSeq   atomic.Int64
	prefix  string
	stopped atomic.Bool
}

// Binaries returns the kube-apiserver and etcd to run: SCION_KUBE_APISERVER
// and SCION_ETCD when set, else the cached build and etcd on PATH (or
// /usr/bin/etcd). The error says how to get what is missing.
func Binaries() (apiserver, etcd string, err error) {
	apiserver = os.Getenv("SCION_KUBE_APISERVER")
	if apiserver == "" {
		apiserver = filepath.Join(CacheDir(), "kube-apiserver")
	}
	etcd = os.Getenv("SCION_ETCD")
	if etcd == "" {
		if p, lerr := exec.LookPath("etcd"); lerr == nil {
			etcd = p
		} else {
			etcd = "/usr/bin/etcd"
		}
	}
	var missing []string
	for _, p := range []string{apiserver, etcd} {
		if fi, serr := os.Stat(p); serr != nil || fi.IsDir() {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("kube-apiserver fixture: %s not found: run `eval \"$(.ci/kube-apiserver.sh)\"` (builds kube-apiserver %s, installs etcd-server)",
			strings.Join(missing, " and "), Version)
	}
	return apiserver, etcd, nil
}

// CacheDir is where .ci/kube-apiserver.sh keeps the built binary:
// ${XDG_CACHE_HOME:-$HOME/.cache}/scion/kube-apiserver-<Version>.
func CacheDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "scion", "kube-apiserver-"+Version)
}

// Start runs etcd and kube-apiserver in a fresh temporary directory and
// waits until /readyz answers ok (about 20 s on two cores). Stop ends both.
func Start(ctx context.Context) (*Cluster, error) {
	return startCluster(ctx, nil)
}

// startCluster is Start with extra kube-apiserver flags.
func startCluster(ctx context.Context, apiArgs []string) (*Cluster, error) {
	apiBin, etcdBin, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "scion-kube")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, prefix: fmt.Sprintf("t%x", time.Now().UnixNano()&0xffffff), apiArgs: apiArgs}
	if err := c.start(ctx, apiBin, etcdBin); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Stop ends the API server and etcd and removes their files.
func (c *Cluster) Stop() {
	if !c.stopped.CompareAndSwap(false, true) {
		return
	}
	if c.api != nil {
		c.api.stop()
	}
	if c.etcd != nil {
		c.etcd.stop()
	}
	// SCION_KUBE_KEEP=1 keeps the logs and data for a post-mortem.
	if os.Getenv("SCION_KUBE_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "kube fixture: kept %s\n", c.dir)
		return
	}
	os.RemoveAll(c.dir)
}

// Namespace creates a fresh namespace for t. Namespaces are not deleted:
// with no namespace controller their deletion would never finish, and the
// whole cluster goes with the test binary anyway.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", c.prefix, c.nsSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// ConfigFor returns a client config that authenticates with token and
// trusts the API server, with no other identity: a ServiceAccount's token
// or one of StaticUsers'.
func (c *Cluster) ConfigFor(token string) *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
		QPS:             200,
		Burst:           400,
	}
}

// CAPEM is the CA that signed the API server's serving certificate.
func (c *Cluster) CAPEM() []byte { return c.caPEM }

// Kubeconfig writes a kubeconfig file with one context per entry of
// tokens (context name -> bearer token), all on this cluster, and returns
// its path. It is for code that loads kubeconfig files, like the runtime's
// profile contexts.
func (c *Cluster) Kubeconfig(t testing.TB, namespace string, tokens map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: %s\n    certificate-authority: %s\n", c.URL, filepath.Join(c.dir, "ca.crt"))
	b.WriteString("users:\n")
	for name, tok := range tokens {
		fmt.Fprintf(&b, "- name: %s\n  user:\n    token: %s\n", name, tok)
	}
	b.WriteString("contexts:\n")
	for name := range tokens {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: test\n    user: %s\n    namespace: %s\n", name, name, namespace)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// StaticUser is a user of the API server's token file, with no groups
// beyond system:authenticated: RBAC decides what it may do.
type StaticUser struct{ Name, Token string }

// StaticUsers are the token-file identities besides the admin, for tests
// that bind a Role to a plain user.
var StaticUsers = []StaticUser{
	{Name: "scion-broker", Token: "scion-broker-token"},
	{Name: "scion-other", Token: "scion-other-token"},
}

const adminToken = "scion-admin-token"

// errNotReady is returned while /readyz does not yet say ok.
var errNotReady = errors.New("not ready")
