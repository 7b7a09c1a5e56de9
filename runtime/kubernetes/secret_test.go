package kubernetes_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

const (
	testSecretValue = "hub-secret-value-5f1d9c"
	testAgentToken  = "sca_agent-token-value-8b2e47"
)

// withSecrets gives sp a Hub secret and an agent token, named secret as
// the broker names them.
func withSecrets(sp runtime.Spec) runtime.Spec {
	sp.Env["API_KEY"] = testSecretValue
	sp.Env["SCION_AGENT_TOKEN"] = testAgentToken
	sp.SecretEnv = []string{"API_KEY", "SCION_AGENT_TOKEN"}
	return sp
}

// podReader is a client authenticated as a ServiceAccount bound to a Role
// with only get and list on pods and configmaps: an operator who may
// look at the namespace's workloads.
func (n ns) podReader(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cl, c := n.c.Client, ctx(t)
	if _, err := cl.CoreV1().ServiceAccounts(n.name).Create(c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list"}}}}
	if _, err := cl.RbacV1().Roles(n.name).Create(c, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "pod-reader", Namespace: n.name}}}
	if _, err := cl.RbacV1().RoleBindings(n.name).Create(c, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube.Granted(t, cl, n.name, rb.Subjects[0], role.Rules)
	tok, err := cl.CoreV1().ServiceAccounts(n.name).CreateToken(c, "pod-reader", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := kubernetes.NewForConfig(n.c.ConfigFor(tok.Status.Token))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPodReaderFindsNoSecret: an account that may only read pods and
// ConfigMaps reads an agent's pod and record, created and started with a
// Hub secret and an agent token, and finds neither value (plain or
// base64) anywhere in them; it can read them (the check is not vacuous)
// and it cannot read the agent's Secret. Delete removes the Secret. On
// the old runtime both values were literal env values in both objects.
func TestPodReaderFindsNoSecret(t *testing.T) {
	n := newNS(t)
	const broker = "broker-secrets"
	rt := n.runtimeAs(t, n.brokerIdentity(t, "scion-broker"), broker, nil)
	reader := n.podReader(t)
	c := ctx(t)
	sp := withSecrets(spec(broker, "sec-1"))
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := rt.Start(c, sp.AgentID); err != nil {
		t.Fatalf("Start: %v", err)
	}

	pods, err := reader.CoreV1().Pods(n.name).List(c, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("reader lists pods: %d, %v; want the agent's pod", len(pods.Items), err)
	}
	cms, err := reader.CoreV1().ConfigMaps(n.name).List(c, metav1.ListOptions{LabelSelector: runtime.LabelAgentID + "=" + sp.AgentID})
	if err != nil || len(cms.Items) != 1 || !strings.Contains(cms.Items[0].Data["pod.json"], "API_KEY") {
		t.Fatalf("reader lists the agent's record: %+v, %v; want the record naming API_KEY", cms.Items, err)
	}
	seen := map[string]any{"pods": pods, "configmaps": cms}
	for _, p := range pods.Items {
		if got, err := reader.CoreV1().Pods(n.name).Get(c, p.Name, metav1.GetOptions{}); err == nil {
			seen["pod "+p.Name] = got
		}
	}
	for what, obj := range seen {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{testSecretValue, testAgentToken} {
			if strings.Contains(string(b), v) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(v))) {
				t.Errorf("a pod and ConfigMap reader finds %q in %s", v, what)
			}
		}
	}
	// What the pod shows instead: the variables' names, from the Secret.
	env := map[string]corev1.EnvVar{}
	for _, e := range pods.Items[0].Spec.Containers[0].Env {
		env[e.Name] = e
	}
	for _, k := range sp.SecretEnv {
		if e := env[k]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Key != k {
			t.Errorf("pod variable %s = %+v, want a secretKeyRef", k, e)
		}
	}
	name := pods.Items[0].Name
	if _, err := reader.CoreV1().Secrets(n.name).Get(c, name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reader gets the agent's Secret: %v, want forbidden", err)
	}
	sec, err := n.c.Client.CoreV1().Secrets(n.name).Get(c, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agent's Secret: %v", err)
	}
	if string(sec.Data["API_KEY"]) != testSecretValue || string(sec.Data["SCION_AGENT_TOKEN"]) != testAgentToken {
		t.Errorf("Secret data = %q", sec.Data)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != cms.Items[0].UID {
		t.Errorf("Secret owners = %+v, want the record %s", sec.OwnerReferences, cms.Items[0].UID)
	}

	if err := rt.Delete(c, sp.AgentID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := n.c.Client.CoreV1().Secrets(n.name).Get(c, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the agent's Secret after Delete: %v, want not found", err)
	}
}

// TestSecretsReachTheAgent: with the local kubelet resolving secretKeyRef
// as a kubelet does, the agent's process sees its Hub secret and token;
// after SetAgentToken (what the broker does at a start) the next Start's
// process sees the new token.
func TestSecretsReachTheAgent(t *testing.T) {
	n := newNS(t)
	agent := testAgent(t)
	startLocalKubelet(t, n, "/")
	const broker = "broker-secrets-kubelet"
	rt := n.runtimeAs(t, n.brokerIdentity(t, "scion-broker"), broker, func(o *k8srt.Options) {
		o.Defaults = k8srt.Settings{Namespace: n.name, NFSPVName: "share-" + n.name, NFSMountPath: "/"}
	})
	c := ctx(t)
	sp := withSecrets(spec(broker, "sec-2"))
	sp.WorkDir = t.TempDir()
	sp.Command = []string{agent, "getenv", "API_KEY", "SCION_AGENT_TOKEN"}
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatalf("Create: %v", err)
	}
	run := func() string {
		t.Helper()
		if _, err := rt.Start(c, sp.AgentID); err != nil {
			t.Fatalf("Start: %v", err)
		}
		waitEvent(t, rt, sp.AgentID, runtime.StateExited)
		return readLogs(t, rt, sp.AgentID, false)
	}
	if out, want := run(), testSecretValue+"\n"+testAgentToken+"\n"; out != want {
		t.Fatalf("agent's output = %q, want %q", out, want)
	}
	const fresh = "sca_fresh-token-at-start"
	if err := rt.SetAgentToken(c, sp.AgentID, fresh); err != nil {
		t.Fatalf("SetAgentToken: %v", err)
	}
	if out, want := run(), testSecretValue+"\n"+fresh+"\n"; out != want {
		t.Fatalf("agent's output after SetAgentToken = %q, want %q", out, want)
	}
}

// TestForeignSecretRefusesCreate: a Secret of the agent's name that is
// not the agent's (someone else's, in the namespace) fails Create before
// anything is made, and is left as it was.
func TestForeignSecretRefusesCreate(t *testing.T) {
	n := newNS(t)
	const broker = "broker-secrets-foreign"
	rt := n.runtimeAs(t, n.brokerIdentity(t, "scion-broker"), broker, nil)
	c := ctx(t)
	sp := withSecrets(spec(broker, "sec-3"))
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatalf("Create: %v", err)
	}
	sel := runtime.LabelAgentID + "=" + sp.AgentID
	cms, err := n.c.Client.CoreV1().ConfigMaps(n.name).List(c, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("record: %d, %v", len(cms.Items), err)
	}
	name := cms.Items[0].Name
	if err := rt.Delete(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": "someone else's"}}
	if _, err := n.c.Client.CoreV1().Secrets(n.name).Create(c, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Create(c, sp); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("Create over a foreign Secret: %v, want already exists", err)
	}
	if cms, err := n.c.Client.CoreV1().ConfigMaps(n.name).List(c, metav1.ListOptions{LabelSelector: sel}); err != nil || len(cms.Items) != 0 {
		t.Errorf("a refused Create left %d records (%v)", len(cms.Items), err)
	}
	got, err := n.c.Client.CoreV1().Secrets(n.name).Get(c, name, metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != "someone else's" || len(got.Data) != 1 {
		t.Errorf("the foreign Secret after the refused Create: %+v, %v", got.Data, err)
	}
}
