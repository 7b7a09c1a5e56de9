package kubernetes_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	schedv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// TestProfileSettingsOnAPIServer applies a profile's pod settings and
// checks that the real API server's admission accepts and completes them
// (the priority class resolves to its value), and refuses, at Create, a
// missing priority class or sandbox account.
func TestProfileSettingsOnAPIServer(t *testing.T) {
	n := newNS(t)
	c := ctx(t)
	pc := &schedv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "scion-agents-" + n.name}, Value: 1000}
	if _, err := n.c.Client.SchedulingV1().PriorityClasses().Create(c, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settings, err := k8srt.ParseSettings(map[string]string{"namespace": n.name, "priority_class": pc.Name,
		"safe_to_evict": "false", "gke_mode": "true", "shared_dir_size": "40Gi", "shared_dir_class": "fast"})
	if err != nil {
		t.Fatal(err)
	}
	const broker = "broker-settings"
	rt := n.runtimeAs(t, n.brokerIdentity(t, "scion-broker"), broker, func(o *k8srt.Options) {
		o.Profiles = map[string]k8srt.Settings{"batch": settings}
		o.DefaultProfile = "batch"
		// Allowed here, so that the API server's admission is what refuses it.
		o.AgentChoices.ServiceAccounts = []string{"no-such-account"}
	})
	sp := spec(broker, "set-1")
	sp.Labels["scion.memory"] = "1g"
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	pod := fakeKubelet{t: t, n: n}.pod(sp.AgentID)
	if pod.Spec.PriorityClassName != pc.Name || pod.Spec.Priority == nil || *pod.Spec.Priority != 1000 {
		t.Errorf("priority class %q value %v, want %s resolved to 1000 by admission", pod.Spec.PriorityClassName, pod.Spec.Priority, pc.Name)
	}
	if pod.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "false" {
		t.Errorf("annotations = %v", pod.Annotations)
	}
	res := pod.Spec.Containers[0].Resources
	if res.Requests.Memory().Value() != 1<<30 || res.Limits.Memory().Value() != 1<<30 {
		t.Errorf("GKE mode resources = %+v, want requests = limits = 1Gi", res)
	}
	var shared bool
	for _, cl := range claimsOf(t, n) {
		if strings.HasSuffix(cl.Name, "-shared-dir") {
			shared = *cl.Spec.StorageClassName == "fast" && cl.Spec.Resources.Requests.Storage().String() == "40Gi"
		}
	}
	if !shared {
		t.Error("no shared directory claim of class fast and 40Gi")
	}

	// What admission refuses fails Create, before anything is made.
	bad := spec(broker, "set-2")
	bad.Labels[k8srt.AgentSettingPrefix+"priority_class"] = "no-such-class"
	if _, err := rt.Create(c, bad); err == nil || !strings.Contains(err.Error(), "no-such-class") {
		t.Errorf("Create with a missing priority class: %v", err)
	}
	bad.Labels[k8srt.AgentSettingPrefix+"priority_class"] = ""
	bad.Labels[k8srt.AgentSettingPrefix+"service_account"] = "no-such-account"
	if _, err := rt.Create(c, bad); err == nil || !strings.Contains(err.Error(), "no-such-account") {
		t.Errorf("Create with a missing sandbox account: %v", err)
	}
	if _, err := rt.Inspect(c, bad.AgentID); err == nil {
		t.Error("a refused Create left a record")
	}
}

// TestProfilesPickContextAndNamespace runs two Kubernetes profiles, each a
// kubeconfig context and namespace, in one runtime: an agent lands where
// its profile says, or where its own namespace setting says (the agent
// wins, the broker listing that namespace in agent_namespaces), and Inventory and lookups span them all.
func TestProfilesPickContextAndNamespace(t *testing.T) {
	c := ctx(t)
	a, b, own := newNS(t), newNS(t), newNS(t)
	u := kube.StaticUsers[1]
	for _, n := range []ns{a, b, own} {
		n.bindRuntimeRole(t, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: u.Name})
	}
	kubeconfig := a.c.Kubeconfig(t, "default", map[string]string{"ctx-a": u.Token, "ctx-b": u.Token})
	const broker = "broker-profiles"
	rt, err := k8srt.New(k8srt.Options{BrokerID: broker, Kubeconfig: kubeconfig, DefaultProfile: "a",
		Profiles:     map[string]k8srt.Settings{"a": {Context: "ctx-a", Namespace: a.name}, "b": {Context: "ctx-b", Namespace: b.name}},
		AgentChoices: k8srt.AgentChoices{Namespaces: []string{own.name}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	specs := map[string]runtime.Spec{}
	for id, labels := range map[string]map[string]string{
		"p-default": {},
		"p-b":       {k8srt.LabelProfile: "b"},
		"p-own":     {k8srt.LabelProfile: "b", k8srt.AgentSettingPrefix + "namespace": own.name},
	} {
		sp := spec(broker, id)
		for k, v := range labels {
			sp.Labels[k] = v
		}
		specs[id] = sp
		if _, err := rt.Create(c, sp); err != nil {
			t.Fatalf("Create %s: %v", id, err)
		}
		if _, err := rt.Start(c, id); err != nil {
			t.Fatalf("Start %s: %v", id, err)
		}
	}
	for id, n := range map[string]ns{"p-default": a, "p-b": b, "p-own": own} {
		if (fakeKubelet{t: t, n: n}).pod(id) == nil {
			t.Errorf("agent %s has no pod in namespace %s", id, n.name)
		}
	}
	bad := spec(broker, "p-bad")
	bad.Labels[k8srt.LabelProfile] = "nope"
	if _, err := rt.Create(c, bad); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Create with an unknown profile: %v", err)
	}

	// A restarted broker knows only its profiles' namespaces until an
	// agent names another: Inventory covers those.
	rt.Close()
	rt2, err := k8srt.New(k8srt.Options{BrokerID: broker, Kubeconfig: kubeconfig, DefaultProfile: "a",
		Profiles: map[string]k8srt.Settings{"a": {Context: "ctx-a", Namespace: a.name}, "b": {Context: "ctx-b", Namespace: b.name}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	inv, err := rt2.Inventory(c)
	if err != nil || len(inv) != 2 {
		t.Fatalf("Inventory after restart = %+v, %v; want the two agents of the profiles' namespaces", inv, err)
	}
	for _, id := range []string{"p-default", "p-b"} {
		if err := rt2.Delete(c, id); err != nil {
			t.Errorf("Delete %s: %v", id, err)
		}
	}
}

// TestScionBinaryInAgents: both ways of giving agents the scion binary
// (an init container copying it, an image volume) make pods the API
// server accepts, with the binary mounted read-only.
func TestScionBinaryInAgents(t *testing.T) {
	n := newNS(t)
	c := ctx(t)
	for _, imageVolume := range []bool{false, true} {
		broker := "broker-bin-" + map[bool]string{false: "init", true: "volume"}[imageVolume]
		rt := n.runtimeAs(t, n.c.Admin, broker, func(o *k8srt.Options) {
			o.ScionImage, o.ImageVolume = "scion-demo:latest", imageVolume
		})
		sp := spec(broker, "bin")
		if _, err := rt.Create(c, sp); err != nil {
			t.Fatalf("image volume %v: Create: %v", imageVolume, err)
		}
		if _, err := rt.Start(c, sp.AgentID); err != nil {
			t.Fatalf("image volume %v: Start: %v", imageVolume, err)
		}
		pods, err := n.c.Client.CoreV1().Pods(n.name).List(c, metav1.ListOptions{LabelSelector: "scion.broker_id=" + broker})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("pods: %v, %v", pods, err)
		}
		pod := pods.Items[0]
		var mounted bool
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			mounted = mounted || (m.MountPath == "/usr/local/bin/scion" && m.ReadOnly)
		}
		var imageVol bool
		for _, v := range pod.Spec.Volumes {
			imageVol = imageVol || (v.Image != nil && v.Image.Reference == "scion-demo:latest")
		}
		if !mounted || imageVol != imageVolume || (len(pod.Spec.InitContainers) == 1) == imageVolume {
			t.Errorf("image volume %v: mounted %v, image volume %v, init containers %d", imageVolume, mounted, imageVol, len(pod.Spec.InitContainers))
		}
	}
}
