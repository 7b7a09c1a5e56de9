package fleet

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/internal/testenv/kube"
)

// impostor is a TLS server with a certificate no kubeconfig trusts that
// answers like an API server and records every bearer token sent to it.
type impostor struct {
	*httptest.Server
	mu     sync.Mutex
	tokens []string
}

func newImpostor(t *testing.T) *impostor {
	im := &impostor{}
	im.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		im.mu.Lock()
		im.tokens = append(im.tokens, r.Header.Get("Authorization"))
		im.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major":"1","minor":"32","gitVersion":"v1.32.0"}`)
	}))
	t.Cleanup(im.Close)
	return im
}

func (im *impostor) seen() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return append([]string(nil), im.tokens...)
}

// insecureKubeconfig turns certificate verification off (and so carries
// no CA: client-go refuses both).
func insecureKubeconfig(server, token string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: spoke
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: sa
  user:
    token: %s
contexts:
- name: spoke
  context: {cluster: spoke, user: sa}
current-context: spoke
`, server, token)
}

// A kubeconfig that turns TLS verification off is refused at load, like
// an exec plugin: with host_aliases pointing at an impostor, the impostor
// would otherwise get the spoke's token with every request.
func TestInsecureSkipTLSVerifyRefused(t *testing.T) {
	im := newImpostor(t)
	u, _ := url.Parse(im.URL)
	c := &Cluster{Name: "dark", KubeconfigSecret: "D", HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"}}
	kc := insecureKubeconfig("https://"+net.JoinHostPort(kube.DarkHost, u.Port()), "spoke-secret-token")
	cfg, _, err := RESTConfig(c, kc, Options{})
	if err == nil {
		// Show what the unrefused config does.
		cs, _ := kubernetes.NewForConfig(cfg)
		_, verr := cs.Discovery().ServerVersion()
		t.Fatalf("accepted (GET /version: %v); the impostor received %q", verr, im.seen())
	}
	if !strings.Contains(err.Error(), "insecure-skip-tls-verify is not allowed") || !strings.Contains(err.Error(), "cluster dark") {
		t.Fatalf("error: %v", err)
	}
	if got := im.seen(); len(got) != 0 {
		t.Fatalf("the impostor received %q", got)
	}
}

// A plain http server would carry the token in the clear: refused, with a
// message that does not quote the server (it may hold userinfo).
func TestPlainHTTPServerRefused(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	kc := kubeconfigFor("http://u:pw@"+u.Host, []byte("unused"), "spoke-secret-token", "")
	kc = []byte(strings.Replace(string(kc), "    certificate-authority-data: dW51c2Vk\n", "", 1))
	_, _, err := RESTConfig(&Cluster{Name: "plain", KubeconfigSecret: "P"}, kc, Options{})
	if err == nil || !strings.Contains(err.Error(), "not an https URL") || strings.Contains(err.Error(), "pw") {
		t.Fatalf("error: %v", err)
	}
	if hits != 0 {
		t.Fatalf("%d requests reached the server", hits)
	}
}
