package kubernetes_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// restrictedNS is a fresh namespace enforcing the Pod Security Standards
// "restricted" profile, checked to refuse a pod that does not meet it (so
// that a test admitting agents there can fail).
func restrictedNS(t *testing.T) ns {
	t.Helper()
	n := newNS(t)
	c := ctx(t)
	cl := n.c.Client
	nsObj, err := cl.CoreV1().Namespaces().Get(c, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	nsObj.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if _, err := cl.CoreV1().Namespaces().Update(c, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "not-restricted"},
		Spec: corev1.PodSpec{ServiceAccountName: k8srt.DefaultServiceAccount,
			Containers: []corev1.Container{{Name: "c", Image: "scion/test-agent:latest"}}},
	}
	_, err = cl.CoreV1().Pods(n.name).Create(c, plain, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod with no security context in a restricted namespace: %v, want refused by PodSecurity admission", err)
	}
	return n
}

// TestRestrictedNamespaceAdmitsAgents: in a namespace enforcing
// restricted, an agent in every sharing mode, without the scion binary,
// with it copied by the scion-bin init container and with it on an image
// volume, is created (the dry run passes admission) and started (the pod
// itself is admitted), and its pod carries no PATH (the image's applies).
func TestRestrictedNamespaceAdmitsAgents(t *testing.T) {
	n := restrictedNS(t)
	c := ctx(t)
	cl := n.c.Client
	for _, bin := range []string{"none", "init", "volume"} {
		for _, mode := range []string{"worktree-per-agent", "shared-workspace", "clone-per-agent", "empty-per-agent"} {
			t.Run(bin+"/"+mode, func(t *testing.T) {
				broker := "broker-pss-" + bin
				rt := n.runtimeAs(t, n.c.Admin, broker, func(o *k8srt.Options) {
					o.Defaults = k8srt.Settings{Namespace: n.name, HomeStorage: "pvc", SharedDirSize: "1Gi"}
					if bin != "none" {
						o.ScionImage, o.ImageVolume = "scion-demo:latest", bin == "volume"
					}
				})
				id := fmt.Sprintf("pss-%s", mode)
				sp := spec(broker, id)
				sp.Labels[k8srt.LabelSharingMode] = mode
				if mode == "worktree-per-agent" { // the git directory and the .git file over the workspace's
					sp.Mounts = []runtime.Mount{{Source: "/srv/scion/projects/proj-1/base/.git", Target: "/srv/scion/projects/proj-1/base/.git"}}
					sp.GitDir = "/srv/scion/projects/proj-1/base/.git/worktrees/workspace"
				}
				if _, err := rt.Create(c, sp); err != nil {
					t.Fatalf("Create: %v", err)
				}
				t.Cleanup(func() { rt.Delete(ctx(t), id) })
				if _, err := rt.Start(c, id); err != nil {
					t.Fatalf("Start: %v", err)
				}
				pods, err := cl.CoreV1().Pods(n.name).List(c, metav1.ListOptions{LabelSelector: "scion.broker_id=" + broker + ",scion.agent_id=" + id})
				if err != nil || len(pods.Items) != 1 {
					t.Fatalf("pods: %v, %v", pods, err)
				}
				pod := pods.Items[0]
				if wantInit := map[string]int{"none": 0, "init": 1, "volume": 0}[bin]; len(pod.Spec.InitContainers) != wantInit {
					t.Errorf("init containers = %d, want %d", len(pod.Spec.InitContainers), wantInit)
				}
				for _, e := range pod.Spec.Containers[0].Env {
					if e.Name == "PATH" {
						t.Errorf("pod sets PATH=%s; the image's PATH should apply", e.Value)
					}
				}
			})
		}
	}
}

// TestRestrictedAgentRuns: an admitted agent in a restricted namespace
// also runs, with the local kubelet (which checks no security context:
// this shows the pod is complete, not that a real kubelet confines it),
// and its output comes back through pods/log.
func TestRestrictedAgentRuns(t *testing.T) {
	n := restrictedNS(t)
	agent := testAgent(t)
	startLocalKubelet(t, n, "/")
	const broker = "broker-pss-run"
	rt := n.runtimeAs(t, n.c.Admin, broker, func(o *k8srt.Options) {
		o.Defaults = k8srt.Settings{Namespace: n.name, NFSPVName: "share-" + n.name, NFSMountPath: "/"}
	})
	sp := spec(broker, "pss-run")
	sp.WorkDir, sp.HomeDir = t.TempDir(), t.TempDir()
	sp.Command = []string{agent, "serve", "restricted-marker", "-ctl", "ctl"}
	c := ctx(t)
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { rt.Delete(ctx(t), sp.AgentID) })
	if _, err := rt.Start(c, sp.AgentID); err != nil {
		t.Fatalf("Start: %v", err)
	}
	wait.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		r, err := rt.Logs(c, sp.AgentID, false)
		if err != nil {
			return fmt.Errorf("the agent's logs: %w", err) // not running yet
		}
		defer r.Close()
		out, _ := io.ReadAll(r)
		if !strings.Contains(string(out), "restricted-marker") {
			return fmt.Errorf("the agent's output %q, want restricted-marker", out)
		}
		return nil
	})
}
