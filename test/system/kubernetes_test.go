package system

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// TestKubernetesBroker runs the whole path on a real kube-apiserver: a
// team Hub, and a broker process started with --runtime kubernetes whose
// one profile is a kubeconfig context and namespace, acting as a user that
// holds only the runtime's Role there. `scion start` makes the agent's pod
// (Pending: there is no kubelet) with the agent's labels, the profile and
// the sharing mode; `runtime-broker status` shows the profile's context
// and namespace; stop removes the pod and delete the agent's record.
func TestKubernetesBroker(t *testing.T) {
	requireBinary(t)
	t.Parallel() // before the fixture (see requireKube)
	c := requireKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.Namespace(t)
	user := kube.StaticUsers[0]
	cl := c.Client
	// The namespace enforces Pod Security "restricted", as a platform
	// team's would: the broker's pods must pass it as built.
	nsObj, err := cl.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := cl.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	prepareAgentNamespace(t, ctx, cl, ns, user.Name)

	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	admin.mustScion(t, "hub", "settings", "set", "--default-image", "scion/test-agent:latest")

	kubeconfig := c.Kubeconfig(t, "default", map[string]string{"batch": user.Token})
	b := newKubeBroker(t, hub.URL, token, "default", kubeconfig, ns)
	b.startKube(t, admin)

	status := b.mustScion(t, "runtime-broker", "status")
	if want := "batch (context batch, namespace " + ns + ")"; !strings.Contains(status, want) {
		t.Errorf("runtime-broker status lacks %q:\n%s", want, status)
	}

	var a api.Agent
	if err := admin.scionJSONCmd(&a, "start", "kube1", "--", "/agent", "serve"); err != nil {
		t.Fatal(err)
	}
	// Its pod is pending (there is no kubelet): the agent is on its way,
	// not running, and says what it waits for.
	if a.Phase != api.PhaseProvisioning || a.ContainerStatus != api.ContainerPending || !strings.HasPrefix(a.StatusMessage, "pending") {
		t.Fatalf("agent %s/%s (%s), want provisioning/pending with the reason (its pod pending)", a.Phase, a.ContainerStatus, a.StatusMessage)
	}
	sel := runtime.LabelAgentID + "=" + a.ID + "," + runtime.LabelBrokerID + "=" + b.brokerID
	pods, err := cl.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of the agent (%s): %v, %v", sel, pods, err)
	}
	pod := pods.Items[0]
	// No node takes it: the scheduler's verdict (the fixture has no
	// kube-scheduler; its condition is written as the scheduler writes
	// it) reaches the Hub through the broker's pod watch.
	const verdict = "0/1 nodes are available: 1 node(s) were unschedulable."
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: verdict, LastTransitionTime: metav1.Now()})
	if _, err := cl.CoreV1().Pods(ns).UpdateStatus(ctx, &pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		agents, err := admin.agentsBySlug()
		if err != nil {
			return err
		}
		got := agents["kube1"]
		if got.Phase != api.PhaseProvisioning || got.ContainerStatus != api.ContainerPending || !strings.Contains(got.StatusMessage, "Unschedulable: "+verdict) {
			return fmt.Errorf("agent kube1 %s/%s (%q), want provisioning/pending with the scheduler's reason", got.Phase, got.ContainerStatus, got.StatusMessage)
		}
		return nil
	})
	for k, want := range map[string]string{runtime.LabelProfile: "batch", runtime.LabelSharingMode: "empty-per-agent", runtime.LabelRunID: a.RunID} {
		if pod.Labels[k] != want {
			t.Errorf("pod label %s = %q, want %q", k, pod.Labels[k], want)
		}
	}
	if pod.Spec.ServiceAccountName != k8srt.DefaultServiceAccount || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("pod runs as %s, automount %v", pod.Spec.ServiceAccountName, *pod.Spec.AutomountServiceAccountToken)
	}
	// No PATH from the broker: the image's applies (the broker's host
	// PATH and directory used to be pushed into every agent).
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "PATH" || strings.Contains(e.Value, filepath.Dir(scionBin)) {
			t.Errorf("pod env %s=%q: the broker's host path reaches the agent", e.Name, e.Value)
		}
	}

	admin.mustScion(t, "stop", "kube1")
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		pods, err := cl.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(pods.Items) != 0 {
			return fmt.Errorf("pods after stop: %d, %v", len(pods.Items), err)
		}
		return nil
	})
	admin.mustScion(t, "delete", "kube1")
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		cms, err := cl.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(cms.Items) != 0 {
			return fmt.Errorf("records after delete: %d, %v", len(cms.Items), err)
		}
		return nil
	})
}

// writeKubernetesSettings adds the Kubernetes runtime's settings to the
// host's settings.yaml (which register wrote): the kubeconfig, and one
// default profile on context "batch" in namespace ns.
func writeKubernetesSettings(t *testing.T, h *host, kubeconfig, ns string) {
	t.Helper()
	path := filepath.Join(h.home, "settings.yaml")
	var s config.Settings
	if b, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
	}
	if s.Server.Broker.Extra == nil {
		s.Server.Broker.Extra = map[string]any{}
	}
	s.Server.Broker.Extra["kubernetes"] = map[string]any{"kubeconfig": kubeconfig}
	s.Server.Broker.Profiles = []config.ProfileSettings{{Name: "batch", Runtime: "kubernetes", Default: true,
		Settings: map[string]string{"context": "batch", "namespace": ns}}}
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
