package system

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// One plain kube-apiserver (etcd and the API server, no node) serves
// every TestKubernetes* and TestFlatBroker* test, each in its own
// namespace with its own Hub and broker: starting one takes 20-40 s, which
// a cluster per test paid four times over.
var (
	kubeOnce sync.Once
	kubeFix  *kube.Cluster
	kubeErr  error
)

// requireKube returns the package's Cluster, started on first use, or
// skips the test (fails it under CI=true) when its binaries are missing.
// A parallel test calls it (and requireSpoke) after t.Parallel, so that
// the fixture starts beside the other parallel tests and never runs, idle,
// during a serial one (TestHubUnderHostileConnections measures latency).
func requireKube(t *testing.T) *kube.Cluster {
	t.Helper()
	requireBinary(t)
	if testing.Short() && !inCI() {
		t.Skip("kube fixture: skipped with -short")
	}
	kubeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		start := time.Now()
		kubeFix, kubeErr = kube.Start(ctx)
		if kubeErr == nil {
			fmt.Fprintf(os.Stderr, "system tests: kube fixture ready at %s in %v\n", kubeFix.URL, time.Since(start).Round(time.Millisecond))
		}
	})
	if kubeErr != nil {
		skipOrFail(t, "no kube-apiserver fixture: %v", kubeErr)
	}
	return kubeFix
}

// kubeCleanupAfterAll stops the shared Cluster once the package is done.
func kubeCleanupAfterAll() {
	if kubeFix != nil {
		kubeFix.Stop()
	}
}

// prepareAgentNamespace makes ns ready for a broker acting as brokerUser,
// as docs/kubernetes.md tells a platform team: the agents' sandbox
// ServiceAccount, and the runtime's Role bound to brokerUser.
func prepareAgentNamespace(t *testing.T, ctx context.Context, cl kubernetes.Interface, ns, brokerUser string) {
	t.Helper()
	if _, err := cl.CoreV1().ServiceAccounts(ns).Create(ctx, kube.SandboxServiceAccount(ns, k8srt.DefaultServiceAccount), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantRole(t, ctx, cl, ns, kube.RuntimeRole(ns, "scion-runtime"), brokerUser)
}

// grantRole creates role in ns and binds it to user (a RoleBinding of the
// role's name).
func grantRole(t *testing.T, ctx context.Context, cl kubernetes.Interface, ns string, role *rbacv1.Role, user string) {
	t.Helper()
	if _, err := cl.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}
	if _, err := cl.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube.Granted(t, cl, ns, subject, role.Rules)
}

// newKubeBroker registers a broker "k8s" with the Hub at hubURL, makes it
// provide for project and writes its Kubernetes settings (kubeconfig,
// namespace ns); it is not started yet (see startKube).
func newKubeBroker(t *testing.T, hubURL, token, project, kubeconfig, ns string) *brokerHost {
	t.Helper()
	b := &brokerHost{host: newHost(t, "k8s"), brokerName: "k8s"}
	b.useHub(t, hubURL, token)
	var reg registration
	b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", "k8s")
	b.brokerID = reg.BrokerID
	b.mustScion(t, "runtime-broker", "provide", "--project", project)
	writeKubernetesSettings(t, b.host, kubeconfig, ns)
	return b
}

// startKube starts b's broker process on the kubernetes runtime and waits
// until admin's Hub lists it online.
func (b *brokerHost) startKube(t *testing.T, admin *host) {
	t.Helper()
	b.proc = b.start(t, "broker-k8s", append([]string{"runtime-broker", "start", "--runtime", "kubernetes"}, hbFlags...)...)
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{"k8s": api.BrokerOnline}) })
}
