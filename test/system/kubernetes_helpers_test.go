package system

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/wait"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// prepareAgentNamespace makes ns ready for a broker acting as brokerUser,
// as docs/kubernetes.md tells a platform team: the agents' sandbox
// ServiceAccount, and the runtime's Role bound to brokerUser.
func prepareAgentNamespace(t *testing.T, ctx context.Context, cl kubernetes.Interface, ns, brokerUser string) {
	t.Helper()
	if _, err := cl.CoreV1().ServiceAccounts(ns).Create(ctx, k8srt.SandboxServiceAccount(ns, k8srt.DefaultServiceAccount), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantRole(t, ctx, cl, ns, k8srt.RuntimeRole(ns, "scion-runtime"), brokerUser)
}

// grantRole creates role in ns and binds it to user (a RoleBinding of the
// role's name).
func grantRole(t *testing.T, ctx context.Context, cl kubernetes.Interface, ns string, role *rbacv1.Role, user string) {
	t.Helper()
	if _, err := cl.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
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
