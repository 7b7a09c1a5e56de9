package probe

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/spoke/check"
)

// rulesFor are RBAC rules granting exactly qs.
func rulesFor(qs []check.Question) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(qs))
	for i, x := range qs {
		res := x.Resource
		if x.Subresource != "" {
			res += "/" + x.Subresource
		}
		out[i] = rbacv1.PolicyRule{APIGroups: []string{x.Group}, Resources: []string{res}, Verbs: []string{x.Verb}}
	}
	return out
}

// grant makes Role name in ns with rules and binds it to subject; it
// returns a func that removes both.
func grant(t *testing.T, kc kubernetes.Interface, ns, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) func() {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube.Granted(t, kc, ns, subject, rules)
	return func() {
		kc.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{})
		kc.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{})
		kube.Revoked(t, kc, ns, subject, rules)
	}
}

// grantCluster is grant with a ClusterRole and ClusterRoleBinding.
func grantCluster(t *testing.T, kc kubernetes.Interface, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) func() {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube.Granted(t, kc, "", subject, rules)
	c := func() {
		kc.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		kc.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.Cleanup(c)
	return c
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccount(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

// spokeKubeconfig is a self-contained kubeconfig of the fixture (or of
// server) with token, as the Hub secret holds it.
func spokeKubeconfig(server string, ca []byte, token, ns string) string {
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
  context: {cluster: spoke, user: sa, namespace: %s}
current-context: spoke
`, server, base64.StdEncoding.EncodeToString(ca), token, ns)
}

// byProbe indexes results by probe.
func byProbe(t *testing.T, rs []check.Result) map[string]check.Result {
	t.Helper()
	m := map[string]check.Result{}
	for _, r := range rs {
		if _, dup := m[r.Probe]; dup {
			t.Fatalf("probe %s twice: %+v", r.Probe, rs)
		}
		m[r.Probe] = r
	}
	return m
}

func wantStatus(t *testing.T, rs []check.Result, probe, status string, substr ...string) check.Result {
	t.Helper()
	r, ok := byProbe(t, rs)[probe]
	if !ok {
		t.Fatalf("no %s probe: %+v", probe, rs)
	}
	if r.Status != status {
		t.Fatalf("%s: %s, want %s: %s | fix: %s", probe, r.Status, status, r.Message, r.Fix)
	}
	for _, s := range substr {
		if !strings.Contains(r.Message+" | "+r.Fix, s) {
			t.Errorf("%s: %q not in %q | %q", probe, s, r.Message, r.Fix)
		}
	}
	return r
}

func allPassed(t *testing.T, rs []check.Result) {
	t.Helper()
	for _, r := range rs {
		if r.Status != api.CheckPassed {
			t.Errorf("%s %s: %s: %s | fix: %s", r.Cluster, r.Probe, r.Status, r.Message, r.Fix)
		}
	}
}
