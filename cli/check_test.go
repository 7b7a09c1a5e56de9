package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/launch"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// runCheck runs the command tree with launch's check daemon, in process.
func runCheck(t *testing.T, args ...string) result {
	t.Helper()
	root := NewRoot(Daemons{Check: launch.Check})
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	code := run(context.Background(), root)
	return result{out.String(), errb.String(), code}
}

func bindRole(t *testing.T, kc *kube.Cluster, ns, name string, rules []rbacv1.PolicyRule, subj rbacv1.Subject) func() {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{subj}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube.Granted(t, kc.Client, ns, subj, rules)
	return func() {
		kc.Client.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{})
		kc.Client.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{})
		kube.Revoked(t, kc.Client, ns, subj, rules)
	}
}

// `scion check` as a whole, on a broker host's files: settings.yaml with a
// Kubernetes broker whose profile runs Jobs on wharf, clusters.toml with
// wharf (the kube fixture as a spoke) and a spoke nobody answers for, the
// spoke kubeconfig from --kubeconfig-secret-file. Ours passes; an
// over-privileged sandbox fails with the fix; an unreachable spoke fails
// in time; exit codes follow.
func TestCheckCommandEndToEnd(t *testing.T) {
	kc := kube.StartForTest(t)
	home := setHome(t)
	ctx := context.Background()
	ns := kc.Namespace(t)
	spokeNS := kc.Namespace(t)
	// The broker's namespace as the runtime wants it.
	if _, err := kc.Client.CoreV1().ServiceAccounts(ns).Create(ctx, kube.SandboxServiceAccount(ns, k8srt.DefaultServiceAccount), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	broker := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "scion-broker"}
	bindRole(t, kc, ns, "scion-runtime", append(kube.RuntimeRules(),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get"}}), broker)
	if _, err := kc.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "scion-check"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scion-check"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "scion-check"}, Subjects: []rbacv1.Subject{broker}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube.Granted(t, kc.Client, "", broker, []rbacv1.PolicyRule{{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}})
	// The spoke identity: exactly the Job permissions in its namespace.
	bindRole(t, kc, spokeNS, "scion-jobs", []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "get", "list", "delete", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "scion-other"})

	brokerKubeconfig := kc.Kubeconfig(t, ns, map[string]string{"broker": "scion-broker-token"})
	settings := fmt.Sprintf(`server:
  broker:
    runtime: kubernetes
    kubernetes:
      kubeconfig: %s
      defaults: {context: broker, namespace: %s}
    profiles:
      - name: gpu
        runtime: kubernetes
        jobs: {cluster: wharf}
`, brokerKubeconfig, ns)
	write := func(name, body string) string {
		p := filepath.Join(home, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("settings.yaml", settings)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	write("clusters.toml", fmt.Sprintf(`[clusters.wharf]
kubeconfig_secret = "SPOKE_WHARF"
namespace = %q

[clusters.gone]
kubeconfig_secret = "SPOKE_GONE"
`, spokeNS))
	kcfg := func(server, token string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: %s\n    certificate-authority-data: %s\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: s\n  context: {cluster: s, user: u}\ncurrent-context: s\n",
			server, base64.StdEncoding.EncodeToString(kc.CAPEM()), token)
	}
	wharf := write("wharf.kubeconfig", kcfg(kc.URL, "scion-other-token"))
	gone := write("gone.kubeconfig", kcfg("https://"+closed, "t"))
	files := []string{"--kubeconfig-secret-file", "SPOKE_WHARF=" + wharf, "--kubeconfig-secret-file", "SPOKE_GONE=" + gone}

	decode := func(t *testing.T, r result) api.CheckReport {
		t.Helper()
		var rep api.CheckReport
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("-o json: %v\n%s\n%s", err, r.out, r.err)
		}
		return rep
	}

	t.Run("ours passes", func(t *testing.T) {
		r := runCheck(t, append([]string{"check", "--cluster", "wharf", "-o", "json"}, files...)...)
		rep := decode(t, r)
		if r.code != 0 || len(rep.Checks) != 4 || rep.Failed() != 0 {
			t.Fatalf("exit %d: %s %s", r.code, r.out, r.err)
		}
		// Everything but the unreachable spoke: its own run below.
		r = runCheck(t, append([]string{"check", "--profile", "gpu", "--clusters", filepath.Join(home, "clusters.toml")}, files...)...)
		if r.code != 1 || !strings.Contains(r.out, "failed  gone [public]") {
			t.Fatalf("--profile gpu: exit %d\n%s%s", r.code, r.out, r.err)
		}
		for _, want := range []string{"passed  wharf [public]  reachability", "passed  broker [broker] (profile gpu)  sandbox-secrets",
			"sandbox-pods", "sandbox-automount", "sandbox-pod-template", "1 of 10 probes failed."} {
			if !strings.Contains(r.out, want) {
				t.Errorf("%q not in\n%s", want, r.out)
			}
		}
	})
	t.Run("an over-privileged sandbox fails", func(t *testing.T) {
		undo := bindRole(t, kc, ns, "oops", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}},
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: k8srt.DefaultServiceAccount})
		defer undo()
		r := runCheck(t, "check", "--profile", "gpu")
		if r.code != 1 {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
		}
		for _, want := range []string{"failed  broker [broker] (profile gpu)  sandbox-secrets: ServiceAccount " + ns + "/scion-agent-sandbox can get secrets, list secrets",
			"fix: remove the RoleBinding oops in namespace " + ns + " granting get secrets"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("%q not in\n%s", want, r.out)
			}
		}
	})
	t.Run("an unreachable spoke fails in time", func(t *testing.T) {
		start := time.Now()
		r := runCheck(t, append([]string{"check", "--cluster", "gone", "--timeout", "1s", "-o", "json"}, files...)...)
		took := time.Since(start)
		rep := decode(t, r)
		if r.code != 1 || len(rep.Checks) != 1 || rep.Checks[0].Probe != "reachability" || rep.Checks[0].Tier != "public" ||
			!strings.Contains(rep.Checks[0].Message, "spoke gone (public tier) unreachable") || rep.Checks[0].Fix == "" {
			t.Fatalf("exit %d: %s %s", r.code, r.out, r.err)
		}
		if took > 2*time.Second {
			t.Errorf("took %v", took)
		}
	})
	// The kubeconfig from the Hub, as a broker reads it: a broker-scoped
	// secret, fetched with the broker's stored credentials.
	t.Run("kubeconfig from the Hub", func(t *testing.T) {
		e := newHub(t, testenv.Options{Brokers: 1})
		useHub(t, "team", e.URL, e.AdminToken)
		mustRun(t, "hub", "secret", "set", "SPOKE_WHARF", "--broker", "b1", "--from-file", wharf)
		b := e.Brokers()[0]
		creds := &config.BrokerCredentials{}
		creds.Put(&config.BrokerConnection{Name: "b1", HubEndpoint: e.URL, BrokerID: b.ID, BrokerName: b.Name, Secret: b.Secret})
		if err := creds.Save(); err != nil {
			t.Fatal(err)
		}
		write("settings.yaml", strings.Replace(settings, "  broker:\n", "  broker:\n    hub_endpoint: "+e.URL+"\n", 1))
		defer write("settings.yaml", settings)
		r := runCheck(t, "check", "--cluster", "wharf")
		if r.code != 0 || !strings.Contains(r.out, "All 4 probes passed.") {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
		}
		// A secret the Hub does not have (or not for this broker) is the
		// kubeconfig probe failed with its fix, the Hub's code in it.
		mustRun(t, "hub", "secret", "delete", "SPOKE_WHARF", "--broker", "b1")
		r = runCheck(t, "check", "--cluster", "wharf", "-o", "json")
		rep := decode(t, r)
		if r.code != 1 || len(rep.Checks) != 1 || rep.Checks[0].Probe != "kubeconfig" || !strings.Contains(rep.Checks[0].Fix, "broker-scoped Hub secret SPOKE_WHARF") {
			t.Fatalf("exit %d: %s %s", r.code, r.out, r.err)
		}
		t.Logf("missing secret: %s", rep.Checks[0].Message)
	})
	t.Run("usage", func(t *testing.T) {
		if r := runCheck(t, "check", "--cluster", "nope"); r.code != exitUsage || !strings.Contains(r.err, "no such cluster") {
			t.Errorf("--cluster nope: %d %s", r.code, r.err)
		}
		if r := runCheck(t, "check", "--profile", "nope"); r.code != exitUsage {
			t.Errorf("--profile nope: %d %s", r.code, r.err)
		}
		if r := runCheck(t, "check", "--kubeconfig-secret-file", "X"); r.code != exitUsage {
			t.Errorf("--kubeconfig-secret-file X: %d %s", r.code, r.err)
		}
		// No file for the secret and no broker registration: the
		// kubeconfig probe fails with the fix, not the command.
		r := runCheck(t, "check", "--cluster", "wharf")
		if r.code != 1 || !strings.Contains(r.out, "kubeconfig") || !strings.Contains(r.out, "--kubeconfig-secret-file SPOKE_WHARF=PATH") {
			t.Errorf("no secret: %d\n%s%s", r.code, r.out, r.err)
		}
	})
}
