package probe

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
	"github.com/scion-go/scion/spoke/check"
)

// sandboxNamespace sets up ns as the runtime runs agents there: our
// sandbox ServiceAccount (runtime/kubernetes's own object), the runtime's
// Role bound to the broker's user, and what scion check needs besides
// (create subjectaccessreviews, get serviceaccounts). It returns a client
// with the broker's credentials.
func sandboxNamespace(t *testing.T, kc *kube.Cluster, brokerUser, brokerToken string, reviews bool) (string, kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	ns := kc.Namespace(t)
	if _, err := kc.Client.CoreV1().ServiceAccounts(ns).Create(ctx, kube.SandboxServiceAccount(ns, k8srt.DefaultServiceAccount), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant(t, kc.Client, ns, "scion-runtime", kube.RuntimeRules(), user(brokerUser))
	grant(t, kc.Client, ns, "scion-check", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get"}}}, user(brokerUser))
	if reviews {
		grantCluster(t, kc.Client, "scion-check-reviews-"+ns, []rbacv1.PolicyRule{{APIGroups: []string{"authorization.k8s.io"},
			Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}}, user(brokerUser))
	}
	cl, err := kubernetes.NewForConfig(kc.ConfigFor(brokerToken))
	if err != nil {
		t.Fatal(err)
	}
	return ns, cl
}

// The acceptance point: scion check's sandbox probes pass on our sandbox
// ServiceAccount and fail, naming the fix, on a deliberately
// over-privileged one: secrets get, pods create, a token automounted.
func TestSandboxOursPassesOverPrivilegedFails(t *testing.T) {
	kc := kube.Need(t)
	ctx := context.Background()
	ns, broker := sandboxNamespace(t, kc, "scion-broker", "scion-broker-token", true)
	target := Target{Name: "fixture", Settings: k8srt.Settings{Namespace: ns}}
	sa := serviceAccount(ns, k8srt.DefaultServiceAccount)

	rs := Sandbox(ctx, broker, nil, target)
	allPassed(t, rs)
	if len(rs) != 5 {
		t.Errorf("%d results: %+v", len(rs), rs)
	}

	t.Run("secrets get", func(t *testing.T) {
		undo := grant(t, kc.Client, ns, "oops-secrets", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}, sa)
		defer undo()
		rs := Sandbox(ctx, broker, nil, target)
		wantStatus(t, rs, check.ProbeSandboxSecrets, api.CheckFailed, "can get secrets in namespace "+ns,
			"remove the RoleBinding oops-secrets in namespace "+ns+" granting get secrets", "Role oops-secrets")
		wantStatus(t, rs, check.ProbeSandboxPods, api.CheckPassed)
	})
	t.Run("pods create", func(t *testing.T) {
		undo := grant(t, kc.Client, ns, "oops-pods", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}, sa)
		defer undo()
		rs := Sandbox(ctx, broker, nil, target)
		wantStatus(t, rs, check.ProbeSandboxPods, api.CheckFailed, "can create pods in namespace "+ns, "remove the RoleBinding oops-pods")
		wantStatus(t, rs, check.ProbeSandboxSecrets, api.CheckPassed)
	})
	t.Run("jobs create through a group binding", func(t *testing.T) {
		// Bound to every ServiceAccount of the namespace, not to ours by
		// name: the review must carry the account's groups to see it.
		grantCluster(t, kc.Client, "oops-jobs-"+ns, []rbacv1.PolicyRule{{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}}},
			rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + ns})
		rs := Sandbox(ctx, broker, nil, target)
		wantStatus(t, rs, check.ProbeSandboxPods, api.CheckFailed, "create jobs.batch", "remove the ClusterRoleBinding oops-jobs-"+ns, "Group system:serviceaccounts:"+ns)
	})
	t.Run("automount true", func(t *testing.T) {
		acct, err := kc.Client.CoreV1().ServiceAccounts(ns).Get(ctx, k8srt.DefaultServiceAccount, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		yes := true
		acct.AutomountServiceAccountToken = &yes
		if _, err := kc.Client.CoreV1().ServiceAccounts(ns).Update(ctx, acct, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			no := false
			acct.AutomountServiceAccountToken = &no
			acct.ResourceVersion = ""
			kc.Client.CoreV1().ServiceAccounts(ns).Update(ctx, acct, metav1.UpdateOptions{})
		}()
		rs := Sandbox(ctx, broker, nil, target)
		wantStatus(t, rs, check.ProbeSandboxAccount, api.CheckFailed, "automountServiceAccountToken true",
			"set automountServiceAccountToken: false on ServiceAccount "+ns+"/"+k8srt.DefaultServiceAccount)
	})
	t.Run("no such account", func(t *testing.T) {
		other := target
		other.Settings.ServiceAccount = "missing"
		rs := Sandbox(ctx, broker, nil, other)
		wantStatus(t, rs, check.ProbeSandboxAccount, api.CheckFailed, "does not exist")
		// The runtime's pod template runs as the profile's account.
		wantStatus(t, rs, check.ProbeSandboxPodSpec, api.CheckPassed, "ServiceAccount missing")
	})
	// After the subtests undid their grants, ours passes again.
	allPassed(t, Sandbox(ctx, broker, nil, target))
}

// A broker whose credentials may not create SubjectAccessReviews fails
// the access-review probe with that fix, rather than passing silently.
func TestSandboxReviewRefused(t *testing.T) {
	kc := kube.Need(t)
	ns, broker := sandboxNamespace(t, kc, "scion-other", "scion-other-token", false)
	rs := Sandbox(context.Background(), broker, nil, Target{Name: "fixture", Settings: k8srt.Settings{Namespace: ns}})
	wantStatus(t, rs, check.ProbeAccessReview, api.CheckFailed, "create on subjectaccessreviews.authorization.k8s.io")
	wantStatus(t, rs, check.ProbeSandboxAccount, api.CheckPassed)
	for _, p := range []string{check.ProbeSandboxSecrets, check.ProbeSandboxPods} {
		if _, ok := byProbe(t, rs)[p]; ok {
			t.Errorf("%s reported without reviews", p)
		}
	}
}

// A closed port for the broker's own cluster is one failed probe.
func TestSandboxBrokerClusterUnreachable(t *testing.T) {
	cl, err := kubernetes.NewForConfig(restFor("https://" + closedPort(t)))
	if err != nil {
		t.Fatal(err)
	}
	rs := Sandbox(context.Background(), cl, nil, Target{Name: "gone"})
	if len(rs) != 1 {
		t.Fatalf("%+v", rs)
	}
	wantStatus(t, rs, check.ProbeBrokerReachable, api.CheckFailed, "server.broker.kubernetes.kubeconfig")
}
