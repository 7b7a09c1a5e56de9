package kubernetes

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/runtime"
)

func testSpec() runtime.Spec {
	return runtime.Spec{AgentID: "a1", RunID: "r1", BrokerID: "b1", ProjectID: "p1", Slug: "s", Image: "img",
		Command: []string{"run"}, Env: map[string]string{"B": "2", "A": "1", "HOME": "/elsewhere"},
		WorkDir: "/srv/scion/projects/p1/agents/a1/workspace", HomeDir: "/srv/scion/projects/p1/agents/a1/home",
		Labels: map[string]string{LabelMemory: "512m", LabelCPUs: "1.5"}}
}

func TestStorageFor(t *testing.T) {
	nfs := Settings{NFSPVName: "share", NFSMountPath: "/srv/scion"}
	gitDir := []runtime.Mount{{Source: "/srv/scion/projects/p1/base/.git", Target: "/srv/scion/projects/p1/base/.git"}}
	type claim struct{ scope, mode string }
	tests := []struct {
		name     string
		mode     string
		s        Settings
		mounts   []runtime.Mount
		claims   map[string]claim  // claim name -> scope and access mode
		subPaths map[string]string // mount path -> sub-path
		wantErr  string
		// persistentHome labels the spec as the experiment does;
		// emptyHome: the home is an emptyDir.
		persistentHome, emptyHome bool
	}{
		{name: "empty", mode: modeEmpty, claims: map[string]claim{"own-workspace": {scopeAgent, "ReadWriteOnce"}}},
		{name: "clone", mode: modeClone, claims: map[string]claim{"own-workspace": {scopeAgent, "ReadWriteOnce"}}},
		{name: "unset mode is empty-per-agent", claims: map[string]claim{"own-workspace": {scopeAgent, "ReadWriteOnce"}}},
		{name: "shared", mode: modeShared, claims: map[string]claim{projectClaimName("p1", "workspace"): {scopeProject, "ReadWriteMany"}}},
		{name: "worktree", mode: modeWorktree, mounts: gitDir, claims: map[string]claim{
			"own-workspace": {scopeAgent, "ReadWriteOnce"}, projectClaimName("p1", "base"): {scopeProject, "ReadWriteMany"}}},
		{name: "mounts need nfs", mode: modeClone, mounts: gitDir, wantErr: "need an NFS share"},
		{name: "nfs worktree", mode: modeWorktree, s: nfs, mounts: gitDir,
			claims:   map[string]claim{nfsClaimName("share"): {scopeShare, "ReadWriteMany"}},
			subPaths: map[string]string{workspacePath: "projects/p1/agents/a1/workspace", "/srv/scion/projects/p1/base/.git": "projects/p1/base/.git"}},
		{name: "nfs home and shared dir", mode: modeShared,
			s:        Settings{NFSPVName: "share", NFSMountPath: "/srv/scion", HomeStorage: "nfs", SharedDirStorage: "nfs"},
			claims:   map[string]claim{nfsClaimName("share"): {scopeShare, "ReadWriteMany"}},
			subPaths: map[string]string{homePath: "projects/p1/agents/a1/home", sharedDirPath: "shared-dirs/p1"}},
		{name: "persistent nfs home (hub.k8s_nfs_home)", mode: modeShared, persistentHome: true,
			s:        Settings{NFSPVName: "share", NFSMountPath: "/srv/scion", HomeStorage: "nfs"},
			claims:   map[string]claim{nfsClaimName("share"): {scopeShare, "ReadWriteMany"}},
			subPaths: map[string]string{homePath: "homes/a1"}},
		{name: "persistent home without nfs home storage", mode: modeEmpty, persistentHome: true,
			claims: map[string]claim{"own-workspace": {scopeAgent, "ReadWriteOnce"}}, emptyHome: true},
		{name: "pvc home and shared dir size", mode: modeEmpty, s: Settings{HomeStorage: "pvc", SharedDirSize: "40Gi"},
			claims: map[string]claim{"own-workspace": {scopeAgent, "ReadWriteOnce"}, "own-home": {scopeAgent, "ReadWriteOnce"},
				projectClaimName("p1", "shared-dir"): {scopeProject, "ReadWriteMany"}}},
		{name: "workspace off the share", mode: modeEmpty, s: Settings{NFSPVName: "share", NFSMountPath: "/mnt/other"}, wantErr: "not on the NFS share"},
		{name: "share without mount path", mode: modeEmpty, s: Settings{NFSPVName: "share"}, wantErr: "nfs_mount_path"},
		{name: "nfs home without share", mode: modeEmpty, s: Settings{HomeStorage: "nfs"}, wantErr: "needs nfs_pv_name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec()
			spec.Mounts = tc.mounts
			if tc.persistentHome {
				spec.Labels[runtime.LabelPersistentHome] = "true"
			}
			st, err := storageFor(spec, tc.mode, tc.s, "own")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]claim{}
			for _, c := range st.claims {
				got[c.Name] = claim{c.Labels[labelClaimScope], string(c.Spec.AccessModes[0])}
				if c.Labels[labelClaimScope] == scopeShare && (c.Spec.VolumeName != "share" || c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "") {
					t.Errorf("share claim not pinned to its volume: %+v", c.Spec)
				}
			}
			if len(got) != len(tc.claims) {
				t.Fatalf("claims = %v, want %v", got, tc.claims)
			}
			for n, want := range tc.claims {
				if got[n] != want {
					t.Errorf("claim %s = %v, want %v", n, got[n], want)
				}
			}
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range st.mounts {
				mounts[m.MountPath] = m
			}
			for _, p := range []string{workspacePath, homePath} {
				if _, ok := mounts[p]; !ok {
					t.Errorf("no mount at %s", p)
				}
			}
			if tc.emptyHome {
				vols := map[string]corev1.Volume{}
				for _, v := range st.volumes {
					vols[v.Name] = v
				}
				if v := vols[mounts[homePath].Name]; v.EmptyDir == nil {
					t.Errorf("home volume %+v, want an emptyDir", v)
				}
			}
			for p, sub := range tc.subPaths {
				if mounts[p].SubPath != sub {
					t.Errorf("mount %s sub-path = %q, want %q", p, mounts[p].SubPath, sub)
				}
			}
		})
	}
}

func TestBuildPod(t *testing.T) {
	s := Settings{PriorityClass: "agents", SafeToEvict: bp(false), GKE: bp(true)}
	pod, _, err := buildPod(podInput{spec: testSpec(), settings: s, name: "scion-x", stopGrace: 1500 * time.Millisecond, scionImage: "scion:1"})
	if err != nil {
		t.Fatal(err)
	}
	ps := pod.Spec
	if ps.ServiceAccountName != DefaultServiceAccount || *ps.AutomountServiceAccountToken || *ps.EnableServiceLinks {
		t.Errorf("pod identity: sa %q automount %v links %v", ps.ServiceAccountName, *ps.AutomountServiceAccountToken, *ps.EnableServiceLinks)
	}
	if ps.RestartPolicy != corev1.RestartPolicyNever || *ps.TerminationGracePeriodSeconds != 2 || ps.PriorityClassName != "agents" {
		t.Errorf("restart %s grace %d priority %q", ps.RestartPolicy, *ps.TerminationGracePeriodSeconds, ps.PriorityClassName)
	}
	if pod.Annotations[annoSafeToEvict] != "false" {
		t.Errorf("safe-to-evict annotation = %q", pod.Annotations[annoSafeToEvict])
	}
	c := ps.Containers[0]
	if got := c.Resources.Limits.Memory().Value(); got != 512<<20 {
		t.Errorf("memory limit = %d, want 512 MiB (Docker's reading of 512m)", got)
	}
	if got := c.Resources.Limits.Cpu().MilliValue(); got != 1500 {
		t.Errorf("cpu limit = %dm, want 1500m", got)
	}
	if !c.Resources.Requests.Memory().Equal(*c.Resources.Limits.Memory()) || c.Resources.Requests.StorageEphemeral().IsZero() {
		t.Errorf("GKE mode: requests %v, want limits and ephemeral storage", c.Resources.Requests)
	}
	env := []string{}
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	if strings.Join(env, " ") != "HOME=/home/agent A=1 B=2" {
		t.Errorf("env = %v, want HOME first, then sorted", env)
	}
	if len(ps.InitContainers) != 1 || c.VolumeMounts[len(c.VolumeMounts)-1].MountPath != scionBinPath || !c.VolumeMounts[len(c.VolumeMounts)-1].ReadOnly {
		t.Errorf("scion binary not mounted read-only: init %v mounts %v", ps.InitContainers, c.VolumeMounts)
	}
	if _, _, err := buildPod(podInput{spec: runtime.Spec{AgentID: "a", Labels: map[string]string{LabelMemory: "lots"}}, name: "n"}); err == nil {
		t.Error("buildPod accepted memory \"lots\"")
	}
}

func TestStatusOf(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{annoLabels: `{"scion.agent_id":"a1","scion.run_id":"r1"}`}}}
	stopped := rec.DeepCopy()
	stopped.Annotations[annoFinishedAt] = "2026-01-02T03:05:00Z"
	stopped.Annotations[annoExitCode] = "143"
	pod := func(phase corev1.PodPhase, cs ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}, Status: corev1.PodStatus{Phase: phase, ContainerStatuses: cs}}
	}
	term := corev1.ContainerStatus{Name: "agent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}
	waiting := corev1.ContainerStatus{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}
	wait := func(reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	running := corev1.ContainerStatus{Name: "agent", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	const unsched = "0/2 nodes are available: 1 node(s) had untolerated taint {gpu: true}, 1 node(s) were unschedulable."
	unschedulable := pod(corev1.PodPending)
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: unsched}}
	bound := func(p *corev1.Pod) *corev1.Pod { p.Spec.NodeName = "n1"; return p }
	initFailing := bound(pod(corev1.PodPending, wait("PodInitializing", "")))
	initFailing.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "scion-bin",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "scion:x"`}}}}
	deleting := bound(pod(corev1.PodPending))
	deleting.DeletionTimestamp = &created
	long := pod(corev1.PodPending)
	long.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: strings.Repeat("é", 600)}}
	tests := []struct {
		name    string
		rec     *corev1.ConfigMap
		pod     *corev1.Pod
		state   string
		code    int
		message string
	}{
		{"record only", rec, nil, runtime.StateCreated, -1, ""},
		{"stopped", stopped, nil, runtime.StateExited, 143, ""},
		{"unscheduled", rec, pod(corev1.PodPending), runtime.StatePending, -1, "pending: not scheduled"},
		{"unschedulable", rec, unschedulable, runtime.StatePending, -1, "pending: Unschedulable: " + unsched},
		{"image missing", rec, pod(corev1.PodPending, waiting), runtime.StatePending, -1, "pending: ErrImageNeverPull"},
		{"image pull error", rec, bound(pod(corev1.PodPending, wait("ErrImagePull", "rpc error: not found"))), runtime.StatePending, -1, "pending: ErrImagePull: rpc error: not found"},
		{"image back-off", rec, bound(pod(corev1.PodPending, wait("ImagePullBackOff", `Back-off pulling image "x"`))), runtime.StatePending, -1, `pending: ImagePullBackOff: Back-off pulling image "x"`},
		{"secret missing", rec, bound(pod(corev1.PodPending, wait("CreateContainerConfigError", `secret "s" not found`))), runtime.StatePending, -1, `pending: CreateContainerConfigError: secret "s" not found`},
		{"creating", rec, bound(pod(corev1.PodPending, wait("ContainerCreating", "ignored"))), runtime.StatePending, -1, "pending: ContainerCreating"},
		{"init image back-off", rec, initFailing, runtime.StatePending, -1, `pending: init container scion-bin: ImagePullBackOff: Back-off pulling image "scion:x"`},
		{"bound, no status", rec, bound(pod(corev1.PodPending)), runtime.StatePending, -1, "pending"},
		{"deleted while pending", rec, deleting, runtime.StatePending, -1, "stopping pending"},
		{"long reason", rec, long, runtime.StatePending, -1, "pending: Unschedulable: " + strings.Repeat("é", (maxReason-len("pending: Unschedulable: "))/2) + "..."},
		{"running", rec, pod(corev1.PodRunning, running), runtime.StateRunning, -1, ""},
		{"running pod, no container status", rec, bound(pod(corev1.PodRunning)), runtime.StatePending, -1, "pending"},
		{"running pod, container crash-looping", rec, pod(corev1.PodRunning, wait("CrashLoopBackOff", "back-off 5m0s")), runtime.StatePending, -1, "pending: CrashLoopBackOff: back-off 5m0s"},
		{"running pod, container ended", rec, pod(corev1.PodRunning, term), runtime.StateExited, 3, "Error"},
		{"failed", rec, pod(corev1.PodFailed, term), runtime.StateExited, 3, "Error"},
		{"succeeded, no status", rec, pod(corev1.PodSucceeded), runtime.StateExited, -1, ""},
	}
	for _, tc := range tests {
		st := statusOf(tc.rec, tc.pod)
		code := -1
		if st.ExitCode != nil {
			code = *st.ExitCode
		}
		if st.State != tc.state || code != tc.code || st.Message != tc.message || st.AgentID != "a1" || st.RunID != "r1" {
			t.Errorf("%s: status = %+v (code %d), want %s code %d %q", tc.name, st, code, tc.state, tc.code, tc.message)
		}
		if tc.pod != nil && !st.StartedAt.Equal(created.Time) {
			t.Errorf("%s: StartedAt = %v, want the pod's creation", tc.name, st.StartedAt)
		}
	}
}
