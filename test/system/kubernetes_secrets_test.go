package system

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// TestKubernetesSecretsOutOfPods is issue 13's first finding, end to end:
// an agent started with `--secret` on a Kubernetes broker (a broker
// process holding only the runtime's Role) is read by a user who may only
// get and list pods and ConfigMaps. Neither the secret's value nor the
// agent's token (which the test takes from the agent's Secret, and proves
// is a working token against the Hub) appears in what that user reads; the
// user cannot read the Secret. A restart puts a fresh token in the Secret;
// a delete removes the Secret.
func TestKubernetesSecretsOutOfPods(t *testing.T) {
	requireBinary(t)
	t.Parallel() // before the fixture (see requireKube)
	c := requireKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.Namespace(t)
	brokerUser, readerUser := kube.StaticUsers[0], kube.StaticUsers[1]
	cl := c.Client
	prepareAgentNamespace(t, ctx, cl, ns, brokerUser.Name)
	grantRole(t, ctx, cl, ns, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list"}}}}, readerUser.Name)
	rc, err := kubernetes.NewForConfig(c.ConfigFor(readerUser.Token))
	if err != nil {
		t.Fatal(err)
	}

	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	admin.mustScion(t, "hub", "settings", "set", "--default-image", "scion/test-agent:latest")
	const secretValue = "db-password-7c41e09a"
	if _, err := client.New(hub.URL, token).PutSecret(ctx, "default", "DB_PASSWORD", secretValue); err != nil {
		t.Fatal(err)
	}

	b := newKubeBroker(t, hub.URL, token, "default", c.Kubeconfig(t, "default", map[string]string{"batch": brokerUser.Token}), ns)
	b.startKube(t, admin)

	var a api.Agent
	if err := admin.scionJSONCmd(&a, "start", "kube-sec", "--secret", "DB_PASSWORD", "--", "/agent", "serve"); err != nil {
		t.Fatal(err)
	}
	sel := runtime.LabelAgentID + "=" + a.ID + "," + runtime.LabelBrokerID + "=" + b.brokerID
	agentToken := func() string {
		t.Helper()
		secs, err := cl.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(secs.Items) != 1 {
			t.Fatalf("the agent's Secret: %d, %v", len(secs.Items), err)
		}
		if got := string(secs.Items[0].Data["DB_PASSWORD"]); got != secretValue {
			t.Errorf("the Secret's DB_PASSWORD = %q", got)
		}
		tok := string(secs.Items[0].Data[api.EnvAgentToken])
		if _, err := client.New(hub.URL, tok).Whoami(ctx); err != nil {
			t.Fatalf("the token in the agent's Secret does not work against the Hub: %v", err)
		}
		return tok
	}
	tok := agentToken()

	pods, err := rc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the reader lists the agent's pod: %d, %v", len(pods.Items), err)
	}
	cms, err := rc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("the reader lists the agent's record: %d, %v", len(cms.Items), err)
	}
	for what, obj := range map[string]any{"pods": pods, "configmaps": cms} {
		out, _ := json.Marshal(obj)
		for name, v := range map[string]string{"the secret's value": secretValue, "the agent token": tok} {
			if strings.Contains(string(out), v) || strings.Contains(string(out), base64.StdEncoding.EncodeToString([]byte(v))) {
				t.Errorf("a pod and ConfigMap reader finds %s in %s", name, what)
			}
		}
	}
	if _, err := rc.CoreV1().Secrets(ns).Get(ctx, pods.Items[0].Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the reader gets the agent's Secret: %v, want forbidden", err)
	}

	// Tokens are issued to the second: once the clock is past the first
	// token's second, the restart's is another one.
	c0, ok := api.ReadAgentTokenClaims(tok)
	if !ok {
		t.Fatal("the Secret's token has no claims")
	}
	wait.Eventually(t, 5*time.Second, pollInterval, func() error {
		if now := time.Now().Unix(); now <= c0.IssuedAt {
			return fmt.Errorf("the clock (%d) is still in the second the first token was issued in (%d)", now, c0.IssuedAt)
		}
		return nil
	})
	admin.mustScion(t, "restart", "kube-sec")
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		if agentToken() == tok {
			return fmt.Errorf("the Secret still holds the token of the first start")
		}
		return nil
	})

	admin.mustScion(t, "delete", "kube-sec")
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		secs, err := cl.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(secs.Items) != 0 {
			return fmt.Errorf("the agent's Secret after delete: %d, %v", len(secs.Items), err)
		}
		return nil
	})
	if _, err := cl.CoreV1().Secrets(ns).Get(ctx, pods.Items[0].Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the agent's Secret after delete: %v", err)
	}
}
