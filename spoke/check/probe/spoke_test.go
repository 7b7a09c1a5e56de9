package probe

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/spoke/check"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
)

func restFor(host string) *rest.Config {
	return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Timeout: 2 * time.Second}
}

// open is a PoolOpener of a pool of t's.
func open(t *testing.T, o fleet.Options) Opener {
	p := connect.NewPool(o, nil)
	t.Cleanup(p.Close)
	return PoolOpener(p)
}

// secretsOf serves secrets from a map, as the Hub would.
func secretsOf(m map[string]string) Secrets {
	return func(_ context.Context, name string) (string, error) {
		v, ok := m[name]
		if !ok {
			return "", errors.New("secret_not_found: no broker secret " + name)
		}
		return v, nil
	}
}

func TestSpokeExactJobPermissionsPass(t *testing.T) {
	kc := kube.Need(t)
	ctx := context.Background()
	ns := kc.Namespace(t)
	grant(t, kc.Client, ns, "scion-jobs", rulesFor(check.SpokeNeedsFor("")), user("scion-broker"))
	c := &fleet.Cluster{Name: "wharf", KubeconfigSecret: "SPOKE_WHARF", Namespace: ns}
	sec := secretsOf(map[string]string{"SPOKE_WHARF": spokeKubeconfig(kc.URL, kc.CAPEM(), "scion-broker-token", "default")})
	rs := Spoke(ctx, open(t, fleet.Options{}), c, "", sec)
	allPassed(t, rs)
	wantStatus(t, rs, check.ProbeReach, api.CheckPassed, kube.Version, "public")
	if len(rs) != 4 {
		t.Errorf("%+v", rs)
	}

	t.Run("namespace from the kubeconfig", func(t *testing.T) {
		c := &fleet.Cluster{Name: "wharf", KubeconfigSecret: "SPOKE_WHARF"}
		sec := secretsOf(map[string]string{"SPOKE_WHARF": spokeKubeconfig(kc.URL, kc.CAPEM(), "scion-broker-token", ns)})
		allPassed(t, Spoke(ctx, open(t, fleet.Options{}), c, "", sec))
	})
	t.Run("the wrong namespace lacks them", func(t *testing.T) {
		c := &fleet.Cluster{Name: "wharf", KubeconfigSecret: "SPOKE_WHARF", Namespace: "elsewhere"}
		rs := Spoke(ctx, open(t, fleet.Options{}), c, "", sec)
		wantStatus(t, rs, check.ProbeJobPermissions, api.CheckFailed, "cannot create jobs.batch", "namespace elsewhere")
	})
	t.Run("missing secret", func(t *testing.T) {
		rs := Spoke(ctx, open(t, fleet.Options{}), c, "", secretsOf(nil))
		wantStatus(t, rs, check.ProbeKubeconfig, api.CheckFailed, "secret_not_found", "broker-scoped Hub secret SPOKE_WHARF")
	})
	t.Run("not self-contained", func(t *testing.T) {
		bad := secretsOf(map[string]string{"SPOKE_WHARF": kubeconfigWithExec(kc.URL)})
		wantStatus(t, Spoke(ctx, open(t, fleet.Options{}), c, "", bad), check.ProbeKubeconfig, api.CheckFailed, "exec")
	})
}

func TestSpokeReadingSecretsFailsLeastPrivilege(t *testing.T) {
	kc := kube.Need(t)
	ns := kc.Namespace(t)
	grant(t, kc.Client, ns, "scion-jobs", rulesFor(check.SpokeNeedsFor("")), user("scion-other"))
	grant(t, kc.Client, ns, "too-much", rulesFor(check.SecretsRead[:2]), user("scion-other"))
	c := &fleet.Cluster{Name: "wharf", KubeconfigSecret: "SPOKE_WHARF", Namespace: ns}
	sec := secretsOf(map[string]string{"SPOKE_WHARF": spokeKubeconfig(kc.URL, kc.CAPEM(), "scion-other-token", ns)})
	rs := Spoke(context.Background(), open(t, fleet.Options{}), c, "gpu", sec)
	wantStatus(t, rs, check.ProbeJobPermissions, api.CheckPassed)
	r := wantStatus(t, rs, check.ProbeLeastPrivilege, api.CheckFailed, "can get secrets, list secrets in namespace "+ns,
		"remove the RoleBinding too-much in namespace "+ns+" granting get secrets", "to User scion-other")
	if r.Profile != "gpu" || r.Cluster != "wharf" || r.Tier != "public" {
		t.Errorf("%+v", r)
	}
}

// A bound ServiceAccount token (TokenRequest, as kubectl create token)
// fails the token probe with the fix; the permissions still pass.
func TestSpokeBoundTokenFails(t *testing.T) {
	kc := kube.Need(t)
	ctx := context.Background()
	ns := kc.Namespace(t)
	if _, err := kc.Client.CoreV1().ServiceAccounts(ns).Create(ctx, kube.SandboxServiceAccount(ns, "scion-spoke"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant(t, kc.Client, ns, "scion-jobs", rulesFor(check.SpokeNeedsFor("")), serviceAccount(ns, "scion-spoke"))
	tr, err := kc.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "scion-spoke", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &fleet.Cluster{Name: "wharf", KubeconfigSecret: "SPOKE_WHARF", Namespace: ns}
	sec := secretsOf(map[string]string{"SPOKE_WHARF": spokeKubeconfig(kc.URL, kc.CAPEM(), tr.Status.Token, ns)})
	rs := Spoke(ctx, open(t, fleet.Options{}), c, "", sec)
	wantStatus(t, rs, check.ProbeToken, api.CheckFailed, "bound ServiceAccount token that expires", "kubernetes.io/service-account-token Secret")
	wantStatus(t, rs, check.ProbeJobPermissions, api.CheckPassed)
	wantStatus(t, rs, check.ProbeLeastPrivilege, api.CheckPassed)
}

// An unreachable spoke (a closed port; a listener that accepts and never
// answers TLS) is the reachability probe failed with the typed error
// naming cluster and tier, within the connect timeout.
func TestSpokeUnreachableWithinTimeout(t *testing.T) {
	const ct = time.Second
	for _, tc := range []struct {
		name string
		addr string
		c    fleet.Cluster
	}{
		{"closed port", closedPort(t), fleet.Cluster{}},
		{"blackhole", blackhole(t), fleet.Cluster{}},
		{"blackhole via host_aliases", "", fleet.Cluster{HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := "https://" + tc.addr
			if tc.addr == "" {
				_, port, _ := net.SplitHostPort(blackhole(t))
				server = "https://" + net.JoinHostPort(kube.DarkHost, port)
			}
			c := tc.c
			c.Name, c.KubeconfigSecret = "far", "SPOKE_FAR"
			sec := secretsOf(map[string]string{"SPOKE_FAR": spokeKubeconfig(server, nil, "t", "default")})
			start := time.Now()
			rs := Spoke(context.Background(), open(t, fleet.Options{ConnectTimeout: ct, RequestTimeout: ct}), &c, "", sec)
			took := time.Since(start)
			if len(rs) != 1 {
				t.Fatalf("%+v", rs)
			}
			wantStatus(t, rs, check.ProbeReach, api.CheckFailed, "spoke far ("+string(c.Tier())+" tier) unreachable")
			if took > ct+time.Second { // slack for a loaded machine; the kernel's own timeouts are minutes
				t.Errorf("answered in %v, connect timeout %v", took, ct)
			}
			t.Logf("%s: failed in %v: %s", tc.name, took.Round(time.Millisecond), rs[0].Message)
		})
	}
}

func kubeconfigWithExec(server string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: spoke
  cluster: {server: ` + server + `}
users:
- name: sa
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}
contexts:
- name: spoke
  context: {cluster: spoke, user: sa}
current-context: spoke
`
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
	var mu sync.Mutex
	var conns []net.Conn
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
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}
