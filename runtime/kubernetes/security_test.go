package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodSecurity: the defaults meet "restricted" (checked field by field,
// as the profile states them), the broker's own IDs apply on an NFS share
// unless the broker is root, and the profile settings override.
func TestPodSecurity(t *testing.T) {
	nfs := Settings{NFSPVName: "share", NFSMountPath: "/srv/scion"}
	tests := []struct {
		name             string
		s                Settings
		hostUID, hostGID int
		uid, gid, fs     int64
		ro               bool
	}{
		{"defaults", Settings{}, 1000, 1000, DefaultRunAsUser, DefaultRunAsUser, DefaultRunAsUser, true},
		{"nfs: the broker's files", nfs, 1000, 100, 1000, 100, 100, true},
		{"nfs, root broker", nfs, 0, 0, DefaultRunAsUser, DefaultRunAsUser, DefaultRunAsUser, true},
		{"settings", Settings{RunAsUser: "1001", RunAsGroup: "2002", FSGroup: "3003", ReadOnlyRootFS: bp(false)}, 1000, 1000, 1001, 2002, 3003, false},
		{"user only: group stays", Settings{RunAsUser: "1001"}, 0, 0, 1001, DefaultRunAsUser, DefaultRunAsUser, true},
		{"settings over nfs", Settings{NFSPVName: "share", RunAsUser: "7", RunAsGroup: "8"}, 1000, 1000, 7, 8, 8, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec := podSecurity(tc.s, tc.hostUID, tc.hostGID)
			p, c := sec.pod, sec.container
			if *p.RunAsUser != tc.uid || *p.RunAsGroup != tc.gid || *p.FSGroup != tc.fs {
				t.Errorf("user %d group %d fsGroup %d, want %d %d %d", *p.RunAsUser, *p.RunAsGroup, *p.FSGroup, tc.uid, tc.gid, tc.fs)
			}
			if !*p.RunAsNonRoot || p.SeccompProfile == nil || p.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod: runAsNonRoot %v seccomp %v", *p.RunAsNonRoot, p.SeccompProfile)
			}
			if *c.AllowPrivilegeEscalation || c.Capabilities == nil || len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" || len(c.Capabilities.Add) != 0 {
				t.Errorf("container: escalation %v capabilities %+v", *c.AllowPrivilegeEscalation, c.Capabilities)
			}
			if *c.ReadOnlyRootFilesystem != tc.ro {
				t.Errorf("readOnlyRootFilesystem = %v, want %v", *c.ReadOnlyRootFilesystem, tc.ro)
			}
		})
	}
	// Root, if an operator asks for it, is not claimed to be non-root
	// (the kubelet would refuse to start the container).
	if sec := podSecurity(Settings{RunAsUser: "0"}, 0, 0); *sec.pod.RunAsNonRoot {
		t.Error("run_as_user 0 with runAsNonRoot true")
	}
}

// TestBuildPodSecurity: the agent and the scion-bin init container are
// both confined, as the same user; a read-only root gets a writable /tmp;
// the spec's PATH, if any, gains the binary's directory, and there is no
// PATH otherwise.
func TestBuildPodSecurity(t *testing.T) {
	for _, ro := range []bool{true, false} {
		spec := testSpec()
		spec.Env["PATH"] = "/opt/tools/bin:/usr/bin"
		pod, _, err := buildPod(podInput{spec: spec, settings: Settings{ReadOnlyRootFS: bp(ro)}, name: "scion-x", scionImage: "scion:1"})
		if err != nil {
			t.Fatal(err)
		}
		agent, init := pod.Spec.Containers[0], pod.Spec.InitContainers[0]
		for _, c := range []corev1.Container{agent, init} {
			if sc := c.SecurityContext; sc == nil || sc.Capabilities == nil || sc.Capabilities.Drop[0] != "ALL" || *sc.AllowPrivilegeEscalation || *sc.ReadOnlyRootFilesystem != ro {
				t.Errorf("ro %v: container %s security context %+v", ro, c.Name, sc)
			}
		}
		if pod.Spec.SecurityContext == nil || *pod.Spec.SecurityContext.RunAsUser != DefaultRunAsUser {
			t.Errorf("pod security context %+v", pod.Spec.SecurityContext)
		}
		var tmp bool
		for _, m := range agent.VolumeMounts {
			tmp = tmp || (m.MountPath == "/tmp" && !m.ReadOnly)
		}
		if tmp != ro {
			t.Errorf("ro %v: writable /tmp mounted %v", ro, tmp)
		}
		for _, e := range agent.Env {
			if e.Name == "PATH" && e.Value != "/opt/tools/bin:/usr/bin:/usr/local/bin" {
				t.Errorf("PATH = %q, want the spec's with /usr/local/bin added", e.Value)
			}
		}
	}
	pod, _, err := buildPod(podInput{spec: testSpec(), name: "scion-x", scionImage: "scion:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "PATH" {
			t.Errorf("pod sets PATH=%q with none in the spec", e.Value)
		}
	}
}

// TestSecuritySettings: IDs are numbers, and an agent cannot set its own
// confinement (that is its profile's or the broker's).
func TestSecuritySettings(t *testing.T) {
	s, err := ParseSettings(map[string]string{"run_as_user": "1000", "fs_group": "2000", "read_only_root_filesystem": "false"})
	if err != nil || s.RunAsUser != "1000" || s.FSGroup != "2000" || *s.ReadOnlyRootFS {
		t.Fatalf("ParseSettings = %+v, %v", s, err)
	}
	for _, bad := range []string{"-1", "root", "1e3", "4294967296"} {
		if _, err := ParseSettings(map[string]string{"run_as_user": bad}); err == nil || !strings.Contains(err.Error(), "run_as_user") {
			t.Errorf("run_as_user %q: err = %v", bad, err)
		}
	}
	for _, key := range []string{"run_as_user", "run_as_group", "fs_group", "read_only_root_filesystem"} {
		_, err := agentSettings(map[string]string{AgentSettingPrefix + key: "0"})
		if err == nil || !strings.Contains(err.Error(), "profile") {
			t.Errorf("agent's own %s: err = %v, want refused", key, err)
		}
	}
	if _, err := agentSettings(map[string]string{AgentSettingPrefix + "namespace": "mine"}); err != nil {
		t.Errorf("agent's own namespace: %v", err)
	}
}
