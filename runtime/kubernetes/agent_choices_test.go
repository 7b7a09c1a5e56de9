package kubernetes_test

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// TestAgentPlacementChoices: an agent's own namespace or service account
// other than its profile's is refused at Create (invalid_request naming
// the key and the broker setting), and nothing is made in either
// namespace, even by a broker whose credentials could; a value the
// broker lists in agent_namespaces / agent_service_accounts is honoured.
func TestAgentPlacementChoices(t *testing.T) {
	home, other, listed := newNS(t), newNS(t), newNS(t)
	c := ctx(t)
	const gpuAccount = "scion-agent-gpu"
	if _, err := listed.c.Client.CoreV1().ServiceAccounts(listed.name).Create(c,
		kube.SandboxServiceAccount(listed.name, gpuAccount), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const broker = "broker-choices"
	// The cluster admin's credentials: only the runtime's own check stands
	// between an agent's settings and the other namespace.
	rt := home.runtimeAs(t, home.c.Admin, broker, func(o *k8srt.Options) {
		o.AgentChoices = k8srt.AgentChoices{Namespaces: []string{listed.name}, ServiceAccounts: []string{gpuAccount}}
	})

	for _, tc := range []struct {
		id, key, value, setting string
	}{
		{"choice-ns", "namespace", other.name, "agent_namespaces"},
		{"choice-sa", "service_account", "default", "agent_service_accounts"},
		{"choice-ctx", "context", "prod-admin", "agent_contexts"},
		{"choice-nfs", "nfs_pv_name", "other-project-share", ""},
	} {
		sp := spec(broker, tc.id)
		sp.Labels[k8srt.AgentSettingPrefix+tc.key] = tc.value
		_, err := rt.Create(c, sp)
		e := api.AsError(err)
		if err == nil || e.Status != 400 || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, "setting "+tc.key) ||
			!strings.Contains(e.Message, "server.broker.kubernetes."+tc.setting) {
			t.Errorf("Create with its own %s %q: %v, want invalid_request naming %s and server.broker.kubernetes.%s", tc.key, tc.value, err, tc.key, tc.setting)
		}
		if _, err := rt.Inspect(c, tc.id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Inspect %s after a refused Create: %v, want not found", tc.id, err)
		}
		for _, n := range []ns{home, other} {
			assertNothingOf(t, n, tc.id)
		}
	}

	// Listed values work: the pod is in the listed namespace, as the
	// listed account.
	sp := spec(broker, "choice-listed")
	sp.Labels[k8srt.AgentSettingPrefix+"namespace"] = listed.name
	sp.Labels[k8srt.AgentSettingPrefix+"service_account"] = gpuAccount
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatalf("Create with a listed namespace and account: %v", err)
	}
	if _, err := rt.Start(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	pod := fakeKubelet{t: t, n: listed}.pod(sp.AgentID)
	if pod == nil || pod.Spec.ServiceAccountName != gpuAccount {
		t.Fatalf("pod in %s = %+v, want one running as %s", listed.name, pod, gpuAccount)
	}
	// The profile's own values (here the broker's default namespace, the
	// built-in account) are always an agent's to name.
	sp = spec(broker, "choice-own")
	sp.Labels[k8srt.AgentSettingPrefix+"namespace"] = home.name
	sp.Labels[k8srt.AgentSettingPrefix+"service_account"] = k8srt.DefaultServiceAccount
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatalf("Create naming its profile's namespace and account: %v", err)
	}
}

// assertNothingOf fails if the namespace holds any object of the agent's.
func assertNothingOf(t *testing.T, n ns, agentID string) {
	t.Helper()
	c, cl := ctx(t), n.c.Client.CoreV1()
	sel := metav1.ListOptions{LabelSelector: runtime.LabelAgentID + "=" + agentID}
	counts := map[string]func() (int, error){
		"pods": func() (int, error) { l, err := cl.Pods(n.name).List(c, sel); return len(l.Items), err },
		"configmaps": func() (int, error) {
			l, err := cl.ConfigMaps(n.name).List(c, sel)
			return len(l.Items), err
		},
		"secrets": func() (int, error) { l, err := cl.Secrets(n.name).List(c, sel); return len(l.Items), err },
		"claims": func() (int, error) {
			l, err := cl.PersistentVolumeClaims(n.name).List(c, sel)
			return len(l.Items), err
		},
	}
	for kind, count := range counts {
		if got, err := count(); err != nil || got != 0 {
			t.Errorf("%s of %s in %s: %d, %v; want none", kind, agentID, n.name, got, err)
		}
	}
}
