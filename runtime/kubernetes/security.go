package kubernetes

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// DefaultRunAsUser is the agents' user (and group) when no setting names
// one and the workspace is not on an NFS share: a non-root ID with no
// meaning on the node (distroless's "nonroot"). The demo image is a
// static binary FROM scratch, which any UID can run.
const DefaultRunAsUser = 65532

// security is the pod's and its containers' security contexts.
type security struct {
	pod       *corev1.PodSecurityContext
	container *corev1.SecurityContext
}

// podSecurity decides the security contexts so that an agent pod meets
// the Pod Security Standards "restricted" profile by default: a non-root
// user, no privilege escalation, every capability dropped, the runtime's
// default seccomp profile, and a read-only root filesystem (the volumes
// are the writable places). fsGroup makes the pod's claims writable by
// that user whatever made them; on an NFS share, which the kubelet does not
// re-own, the files are the broker's, so with no setting the agent runs as
// the broker's own user (when that is not root). The settings run_as_user,
// run_as_group, fs_group and read_only_root_filesystem change what a
// harness truly needs; run_as_user 0 gives a pod that restricted (and
// runAsNonRoot) refuses, and is the operator's explicit choice.
func podSecurity(s Settings, hostUID, hostGID int) security {
	uid, gid := int64(DefaultRunAsUser), int64(DefaultRunAsUser)
	if s.NFSPVName != "" && hostUID > 0 {
		uid = int64(hostUID)
		gid = int64(hostGID)
	}
	uid = idOr(s.RunAsUser, uid)
	gid = idOr(s.RunAsGroup, gid)
	fs := idOr(s.FSGroup, gid)
	nonRoot := uid != 0
	no := false
	ro := s.ReadOnlyRootFS == nil || *s.ReadOnlyRootFS
	// Changing ownership only when the volume's root is not the group's
	// already keeps a large workspace from being walked at every start.
	onMismatch := corev1.FSGroupChangeOnRootMismatch
	return security{
		pod: &corev1.PodSecurityContext{
			RunAsNonRoot:        &nonRoot,
			RunAsUser:           &uid,
			RunAsGroup:          &gid,
			FSGroup:             &fs,
			FSGroupChangePolicy: &onMismatch,
			SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		container: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   &ro,
		},
	}
}

// idOr is the numeric ID v (validated by Settings.validate), or def when
// v is unset.
func idOr(v string, def int64) int64 {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	return def
}
