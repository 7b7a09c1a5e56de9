package kubernetes_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// TestSharingModesOnAPIServer creates an agent in each sharing mode, with
// plain claims and on an NFS share's volume, through the real API server:
// its validation and admission accept every pod and claim, they are found
// by the scion.* label selectors, the pod runs as the sandbox account with
// no token, and Delete removes the agent's own objects and keeps the
// project's and the share's.
func TestSharingModesOnAPIServer(t *testing.T) {
	n := newNS(t)
	c := ctx(t)
	cl := n.c.Client
	// The NFS share's PersistentVolume, as an operator would make it.
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "scion-nfs-" + n.name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				NFS: &corev1.NFSVolumeSource{Server: "nfs.example.invalid", Path: "/export/scion"}},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		},
	}
	if _, err := cl.CoreV1().PersistentVolumes().Create(c, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nfs := k8srt.Settings{NFSPVName: pv.Name, NFSMountPath: "/srv/scion", HomeStorage: "nfs", SharedDirStorage: "nfs"}
	plain := k8srt.Settings{WorkspaceSize: "5Gi", HomeStorage: "pvc", SharedDirSize: "20Gi"}

	const broker = "broker-modes"
	for _, storage := range []struct {
		name     string
		settings k8srt.Settings
	}{{"pvc", plain}, {"nfs", nfs}} {
		for _, mode := range []string{"worktree-per-agent", "shared-workspace", "clone-per-agent", "empty-per-agent"} {
			t.Run(storage.name+"/"+mode, func(t *testing.T) {
				settings := storage.settings
				settings.Namespace = n.name
				rt := n.runtimeAs(t, n.c.Admin, broker, func(o *k8srt.Options) { o.Defaults = settings })
				id := fmt.Sprintf("%s-%s", storage.name, mode)
				sp := spec(broker, id)
				sp.Labels[k8srt.LabelSharingMode] = mode
				if mode == "worktree-per-agent" {
					// The base clone's git directory, and the worktree's in it.
					sp.Mounts = []runtime.Mount{{Source: "/srv/scion/projects/proj-1/base/.git", Target: "/srv/scion/projects/proj-1/base/.git"}}
					sp.GitDir = "/srv/scion/projects/proj-1/base/.git/worktrees/workspace3"
				}
				if _, err := rt.Create(c, sp); err != nil {
					t.Fatalf("Create: %v", err)
				}
				if _, err := rt.Start(c, id); err != nil {
					t.Fatalf("Start: %v", err)
				}
				sel := labels.SelectorFromSet(labels.Set{
					runtime.LabelAgentID: id, runtime.LabelRunID: "run-" + id, runtime.LabelBrokerID: broker}).String()
				pods, err := cl.CoreV1().Pods(n.name).List(c, metav1.ListOptions{LabelSelector: sel})
				if err != nil || len(pods.Items) != 1 {
					t.Fatalf("pods by label %s: %v, %v", sel, pods, err)
				}
				pod := pods.Items[0]
				checkSandbox(t, &pod)
				claims := claimNames(t, n, "")
				for _, v := range pod.Spec.Volumes {
					if v.PersistentVolumeClaim != nil && !slices.Contains(claims, v.PersistentVolumeClaim.ClaimName) {
						t.Errorf("pod volume %s names claim %s, which does not exist (claims: %v)", v.Name, v.PersistentVolumeClaim.ClaimName, claims)
					}
				}
				checkMounts(t, &pod, storage.name, mode)
				own := claimNames(t, n, sel)
				switch {
				case storage.name == "nfs" && len(own) != 0:
					t.Errorf("agent on the NFS share has claims of its own: %v", own)
				case storage.name == "pvc" && mode == "shared-workspace" && len(own) != 1: // the home
					t.Errorf("shared-workspace agent's own claims = %v, want its home only", own)
				case storage.name == "pvc" && mode != "shared-workspace" && len(own) != 2: // workspace, home
					t.Errorf("agent's own claims = %v, want workspace and home", own)
				}

				before := claimNames(t, n, "")
				if err := rt.Delete(c, id); err != nil {
					t.Fatalf("Delete: %v", err)
				}
				if pods, _ := cl.CoreV1().Pods(n.name).List(c, metav1.ListOptions{LabelSelector: sel}); len(pods.Items) != 0 {
					t.Errorf("pods left after Delete: %d", len(pods.Items))
				}
				if cms, _ := cl.CoreV1().ConfigMaps(n.name).List(c, metav1.ListOptions{LabelSelector: sel}); len(cms.Items) != 0 {
					t.Errorf("records left after Delete: %d", len(cms.Items))
				}
				if left := claimNames(t, n, sel); len(left) != 0 {
					t.Errorf("agent's claims left after Delete: %v", left)
				}
				after := claimNames(t, n, "")
				if want := len(before) - len(own); len(after) != want {
					t.Errorf("claims after Delete = %v, want %d (project and share claims kept)", after, want)
				}
			})
		}
	}
}

// checkSandbox checks that the pod runs as the permissionless sandbox
// account and gets no token.
func checkSandbox(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if pod.Spec.ServiceAccountName != k8srt.DefaultServiceAccount {
		t.Errorf("pod runs as %q, want %s", pod.Spec.ServiceAccountName, k8srt.DefaultServiceAccount)
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken = %v, want false", a)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil || v.Secret != nil {
			t.Errorf("pod has a token or secret volume %s (added by admission?)", v.Name)
		}
	}
}

// checkMounts checks where the workspace and home come from.
func checkMounts(t *testing.T, pod *corev1.Pod, storage, mode string) {
	t.Helper()
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m
	}
	ws, ok := mounts["/workspace"]
	if !ok {
		t.Fatalf("no /workspace mount: %v", mounts)
	}
	if storage == "nfs" && ws.SubPath == "" {
		t.Errorf("NFS workspace mount has no sub-path: %+v", ws)
	}
	if _, ok := mounts["/home/agent"]; !ok {
		t.Errorf("no home mount")
	}
	if _, ok := mounts["/scion/shared"]; !ok {
		t.Errorf("no shared directory mount")
	}
	if mode == "worktree-per-agent" {
		// At a fixed path, not the broker's data directory, with the
		// workspace's .git pointing there.
		if _, ok := mounts["/scion/git"]; !ok {
			t.Errorf("worktree agent has no git directory mount at /scion/git: %v", mounts)
		}
		if _, ok := mounts["/srv/scion/projects/proj-1/base/.git"]; ok {
			t.Errorf("worktree agent's git directory is at the broker's data-dir path: %v", mounts)
		}
		if m, ok := mounts["/workspace/.git"]; !ok || !m.ReadOnly {
			t.Errorf("worktree agent's .git file not mounted read-only: %v", mounts)
		}
		if got := pod.Annotations["scion.dev/dot-git"]; got != "gitdir: /scion/git/worktrees/workspace3" {
			t.Errorf("pod's .git = %q", got)
		}
	}
}

// claimNames lists the namespace's claims matching sel that are not being
// deleted. A deleted claim keeps the kubernetes.io/pvc-protection
// finalizer that admission puts on every claim until the controller-
// manager's protection controller sees no pod using it; this cluster has
// none, so a deleted claim stays, marked with its deletion time.
func claimNames(t *testing.T, n ns, sel string) []string {
	t.Helper()
	list, err := n.c.Client.CoreV1().PersistentVolumeClaims(n.name).List(ctx(t), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		if c.DeletionTimestamp != nil {
			continue
		}
		out = append(out, c.Name)
	}
	return out
}

// claimsOf lists the namespace's claims.
func claimsOf(t *testing.T, n ns) []corev1.PersistentVolumeClaim {
	t.Helper()
	list, err := n.c.Client.CoreV1().PersistentVolumeClaims(n.name).List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
