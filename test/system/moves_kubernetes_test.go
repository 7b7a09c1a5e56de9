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
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// TestKubernetesMoveClonePerAgentOverAClaimedExport, on the kube-apiserver
// fixture with two Kubernetes broker processes whose workspace exports are
// one directory bind-mounted at a mount point of each, both naming the
// share's PersistentVolume (pv_name): a clone-per-agent agent's workspace
// is on the export, so a move's checks pass (the per-agent workspace is on
// the export only on Kubernetes with a PV claim), and after the move the
// pod of the new run on the target names the same claim, at the same
// sub-path, as the pod the agent had on the source. With the
// hub.k8s_nfs_home experiment on and both profiles keeping homes on the
// share, the agent's home travels too: both pods mount homes/<agentID>.
func TestKubernetesMoveClonePerAgentOverAClaimedExport(t *testing.T) {
	t.Parallel() // before the fixture (see requireKube)
	c := requireKube(t)
	if os.Geteuid() != 0 {
		skipOrFail(t, "bind mounts need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.Namespace(t)
	user := kube.StaticUsers[0]
	cl := c.Client
	prepareAgentNamespace(t, ctx, cl, ns, user.Name)

	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	remotes := t.TempDir()
	admin.mustScion(t, "project", "create", "cl", "--sharing-mode", api.SharingClonePerAgent, "--git-remote", makeGitRemote(t, remotes))
	admin.mustScion(t, "hub", "settings", "set", "--default-image", "scion/test-agent:latest", "--experiment", api.ExperimentK8sNFSHome+"=on")

	export := t.TempDir()
	if err := os.Mkdir(filepath.Join(export, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	const pv = "scion-workspaces"
	kubeconfig := c.Kubeconfig(t, "default", map[string]string{"batch": user.Token})
	for _, name := range []string{"ka", "kb"} {
		m := bindExport(t, export)
		b := &brokerHost{host: newHost(t, name), brokerName: name}
		b.useHub(t, hub.URL, token)
		var reg registration
		b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
		b.mustScion(t, "runtime-broker", "provide", "--project", "cl")
		writeKubernetesSettings(t, b.host, kubeconfig, ns)
		allowLocalGitRemotes(t, b.host, remotes)
		writeClaimedExport(t, b.host, m, pv)
		b.proc = b.start(t, "broker-"+name, append([]string{"runtime-broker", "start", "--runtime", "kubernetes"}, hbFlags...)...)
	}
	online := map[string]string{"ka": api.BrokerOnline, "kb": api.BrokerOnline}
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(online) })

	var a api.Agent
	if err := admin.scionJSONCmd(&a, "start", "mover", "--project", "cl", "--broker", "ka", "--", "/agent", "serve"); err != nil {
		t.Fatal(err)
	}
	before := agentPodClaim(t, ctx, cl, ns, a.ID, a.RunID)
	if before.claim == "" || before.subPath != "ws/agents/"+a.ID+"/workspace" || before.home != before.claim || before.homeSub != "homes/"+a.ID {
		t.Fatalf("the source pod mounts the workspace and home as %+v, want the share's claim at ws/agents/%s/workspace and homes/%s", before, a.ID, a.ID)
	}
	if _, err := os.Stat(filepath.Join(export, "ws", "agents", a.ID, "workspace", ".git")); err != nil {
		t.Fatalf("the clone is not on the export: %v", err)
	}

	out := admin.mustScion(t, "reincarnate", "mover", "--project", "cl", "--broker", "kb", "--dry-run")
	if !strings.Contains(out, "eligible, transfer mode export") {
		t.Fatalf("the dry run:\n%s", out)
	}
	st := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			st[f[0]] = f[1]
		}
	}
	for _, check := range api.MoveCheckOrder {
		want := api.CheckPassed
		if check == api.CheckWorkspaceRecreatable {
			want = api.CheckNotEvaluated
		}
		if st[check] != want {
			t.Errorf("the dry run shows %s %q, want %s:\n%s", check, st[check], want, out)
		}
	}
	if out := admin.mustScion(t, "reincarnate", "mover", "--project", "cl", "--broker", "kb"); !strings.Contains(out, "Move completed") {
		t.Fatalf("the move:\n%s", out)
	}
	bySlug, err := admin.agentsBySlug()
	if err != nil {
		t.Fatal(err)
	}
	moved := bySlug["mover"]
	if moved.BrokerName != "kb" || moved.Generation != 2 || moved.RunID == a.RunID {
		t.Fatalf("after the move: %+v", moved)
	}
	after := agentPodClaim(t, ctx, cl, ns, a.ID, moved.RunID)
	if after != before {
		t.Errorf("the target's pod mounts the workspace as %+v, the source's did as %+v: want the same claim and sub-path", after, before)
	}
	if _, err := os.Stat(filepath.Join(export, "ws", "agents", a.ID, "workspace", ".git")); err != nil {
		t.Errorf("the clone on the export after the move: %v", err)
	}
}

// podClaim is how a pod mounts /workspace and its home: the claims and
// their sub-paths.
type podClaim struct{ claim, subPath, home, homeSub string }

// agentPodClaim finds the pod of the agent's run and how it mounts the
// workspace.
func agentPodClaim(t *testing.T, ctx context.Context, cl kubernetes.Interface, ns, agentID, runID string) podClaim {
	t.Helper()
	var got podClaim
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		l, err := cl.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: runtime.LabelAgentID + "=" + agentID + "," + runtime.LabelRunID + "=" + runID})
		if err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("%d pods of run %s", len(l.Items), runID)
		}
		got = workspaceClaim(&l.Items[0])
		return nil
	})
	return got
}

// workspaceClaim is how pod mounts /workspace.
func workspaceClaim(pod *corev1.Pod) podClaim {
	claims := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	var pc podClaim
	for _, ctr := range pod.Spec.Containers {
		for _, m := range ctr.VolumeMounts {
			switch m.MountPath {
			case "/workspace":
				pc.claim, pc.subPath = claims[m.Name], m.SubPath
			case "/home/agent":
				pc.home, pc.homeSub = claims[m.Name], m.SubPath
			}
		}
	}
	return pc
}

// writeClaimedExport sets server.workspace_storage to the share named by
// every broker of the test, mounted at mount, with its PersistentVolume
// pv, and the Kubernetes profile's nfs_pv_name and nfs_mount_path to
// match, so that pods mount the share through a claim.
func writeClaimedExport(t *testing.T, h *host, mount, pv string) {
	t.Helper()
	path := filepath.Join(h.home, "settings.yaml")
	var s config.Settings
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s.Server.WorkspaceStorage = config.WorkspaceStorageSettings{Backend: config.StorageNFS, NFS: config.NFSSettings{
		Shares: []config.NFSShare{{Server: "nfs.test", Export: "/srv/scion", SubpathRoot: "ws", MountPath: mount, PVName: pv}}}}
	for i := range s.Server.Broker.Profiles {
		s.Server.Broker.Profiles[i].Settings["nfs_pv_name"] = pv
		s.Server.Broker.Profiles[i].Settings["nfs_mount_path"] = mount
		s.Server.Broker.Profiles[i].Settings["home_storage"] = "nfs"
	}
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
