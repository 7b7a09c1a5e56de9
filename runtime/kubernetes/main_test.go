package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// The package's system tests run against one real kube-apiserver (and
// etcd), started here and shared; each test works in a namespace of its
// own. There is no kubelet: pods are validated, admitted, stored and
// watched, never run.
func TestMain(m *testing.M) { os.Exit(kube.Main(m)) }

// ns is one test's namespace with the agents' sandbox account in it.
type ns struct {
	c    *kube.Cluster
	name string
}

func newNS(t *testing.T) ns {
	t.Helper()
	c := kube.Need(t)
	n := ns{c: c, name: c.Namespace(t)}
	_, err := c.Client.CoreV1().ServiceAccounts(n.name).Create(ctx(t),
		kube.SandboxServiceAccount(n.name, k8srt.DefaultServiceAccount), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// brokerIdentity makes a ServiceAccount for the broker in the namespace,
// binds a Role with exactly kube.RuntimeRules to it, and returns a client
// config that authenticates as that account (a token from the
// TokenRequest API) and nothing else.
func (n ns) brokerIdentity(t *testing.T, name string) *rest.Config {
	t.Helper()
	cl := n.c.Client
	c := ctx(t)
	if _, err := cl.CoreV1().ServiceAccounts(n.name).Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.bindRuntimeRole(t, rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: n.name})
	tok, err := cl.CoreV1().ServiceAccounts(n.name).CreateToken(c, name, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.c.ConfigFor(tok.Status.Token)
}

// bindRuntimeRole creates the runtime's Role in the namespace (once) and
// binds it to subject.
func (n ns) bindRuntimeRole(t *testing.T, subject rbacv1.Subject) {
	t.Helper()
	cl := n.c.Client
	c := ctx(t)
	if _, err := cl.RbacV1().Roles(n.name).Create(c, kube.RuntimeRole(n.name, "scion-runtime"), metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scion-runtime-" + strings.ToLower(subject.Kind) + "-" + subject.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "scion-runtime"},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := cl.RbacV1().RoleBindings(n.name).Create(c, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube.Granted(t, cl, n.name, subject, kube.RuntimeRules())
}

// runtimeAs returns a runtime for brokerID whose every request is made as
// cfg, in the namespace, closed at the end of the test.
func (n ns) runtimeAs(t *testing.T, cfg *rest.Config, brokerID string, mod func(*k8srt.Options)) *k8srt.Runtime {
	t.Helper()
	opts := k8srt.Options{BrokerID: brokerID, Config: cfg, Defaults: k8srt.Settings{Namespace: n.name}}
	if mod != nil {
		mod(&opts)
	}
	rt, err := k8srt.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// spec is an agent spec of broker for the tests.
func spec(broker, id string) runtime.Spec {
	return runtime.Spec{
		AgentID: id, RunID: "run-" + id, BrokerID: broker, ProjectID: "proj-1", Slug: "Slug " + id,
		Image: "scion/test-agent:latest", Command: []string{"/agent", "serve"},
		Env:     map[string]string{"SCION_AGENT_ID": id},
		WorkDir: "/srv/scion/projects/proj-1/agents/" + id + "/workspace",
		HomeDir: "/srv/scion/projects/proj-1/agents/" + id + "/home",
		Labels:  map[string]string{"scion.ports": "8080:31000"},
	}
}

func ptr[T any](v T) *T { return &v }

var _ = fmt.Sprint
