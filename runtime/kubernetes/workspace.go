package kubernetes

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/runtime"
)

// Sharing modes, as api.Sharing* (runtime packages do not import api).
const (
	modeWorktree = "worktree-per-agent"
	modeShared   = "shared-workspace"
	modeClone    = "clone-per-agent"
	modeEmpty    = "empty-per-agent"
)

// Paths inside an agent's pod.
const (
	workspacePath = "/workspace"
	homePath      = "/home/agent"
	sharedDirPath = "/scion/shared"
	// gitCommonPath is where a worktree agent sees the base clone's git
	// directory: a fixed path, not the broker's data directory, which
	// neither tells the agent about the broker's host nor ties the pod to
	// one broker's layout (two brokers on one NFS export may differ).
	gitCommonPath = "/scion/git"
	scionBinPath  = "/usr/local/bin/scion"
)

// Claim scopes: whose a PersistentVolumeClaim is.
const (
	scopeAgent   = "agent"   // deleted with the agent
	scopeProject = "project" // the project's shared checkout, base clone, shared directory
	scopeShare   = "share"   // bound to the NFS share's PersistentVolume
)

// storage is where an agent's files live in Kubernetes: the pod's volumes
// and mounts, and the claims they need (the runtime creates missing ones).
type storage struct {
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
	claims  []*corev1.PersistentVolumeClaim
	// annotations are the pod's that a volume reads (the worktree's .git
	// file, through the downward API).
	annotations map[string]string
}

// annoDotGit is the pod annotation holding a worktree agent's .git file
// as the pod must see it: "gitdir: /scion/git/worktrees/<name>".
const annoDotGit = "scion.dev/dot-git"

// worktreeLink returns, for a worktree agent's mount m, the path its
// .git file must name in the pod when m (the base clone's git directory)
// is at gitCommonPath: ok is false when spec.GitDir is not inside m.
// The worktree's own git directory names its common directory
// relatively (its commondir file, "../.."), so that resolves in the pod
// as well; only the .git file holds an absolute host path.
func worktreeLink(spec runtime.Spec, m runtime.Mount) (string, bool) {
	if spec.GitDir == "" {
		return "", false
	}
	rel, err := filepath.Rel(filepath.Clean(m.Source), filepath.Clean(spec.GitDir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", false
	}
	return "gitdir: " + path.Join(gitCommonPath, filepath.ToSlash(rel)), true
}

// gitMountPath is where m appears in the pod: the fixed gitCommonPath
// for a worktree's git directory (with the .git file that points there,
// see addDotGit), else its host path.
func gitMountPath(spec runtime.Spec, mode string, m runtime.Mount) (string, string) {
	if mode == modeWorktree {
		if link, ok := worktreeLink(spec, m); ok {
			return gitCommonPath, link
		}
	}
	return m.Target, ""
}

// addDotGit shows link as the workspace's .git file: a read-only file
// from the downward API over the broker's, which stays as the broker
// wrote it (on an NFS share the broker uses that very file).
func (st *storage) addDotGit(link string) {
	const vol = "dot-git"
	st.annotations = map[string]string{annoDotGit: link}
	st.volumes = append(st.volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: vol, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annoDotGit + "']"}}}}}})
	st.mounts = append(st.mounts, corev1.VolumeMount{Name: vol, MountPath: path.Join(workspacePath, ".git"), SubPath: vol, ReadOnly: true})
}

// storageFor decides, purely, where the agent's workspace, home and the
// project's shared directory live, for its sharing mode and settings.
//
// With an NFS share (nfs_pv_name), the broker's host paths are on the
// share: Spec.WorkDir, the Mounts (a worktree's git directory) and, with
// the nfs backend, the home map to sub-paths of one claim bound to the
// share's PersistentVolume, so the pod sees the very files the broker made,
// in every sharing mode, and a move between brokers on the same export
// keeps them. Without one, each per-agent mode gets a claim of the
// agent's, shared-workspace one claim of the project's, and
// worktree-per-agent also the project's base-clone claim at the git
// directory's path.
//
// An agent's own claims are named after own, which is unique to this
// Create: a claim of an earlier agent of the same ID may still be on its
// way out (the pvc-protection finalizer keeps it until no pod uses it).
func storageFor(spec runtime.Spec, mode string, s Settings, own string) (storage, error) {
	var st storage
	owned := map[string]bool{}
	claim := func(claimName, scope, class, size string, modes ...corev1.PersistentVolumeAccessMode) {
		if owned[claimName] {
			return
		}
		owned[claimName] = true
		st.volumes = append(st.volumes, corev1.Volume{Name: claimName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}})
		st.claims = append(st.claims, newClaim(claimName, scope, class, size, modes))
	}
	mount := func(claimName, at, subPath string, ro bool) {
		st.mounts = append(st.mounts, corev1.VolumeMount{Name: claimName, MountPath: at, SubPath: subPath, ReadOnly: ro})
	}
	rwo := corev1.ReadWriteOnce
	rwx := corev1.ReadWriteMany
	var nfs string
	if s.NFSPVName != "" {
		nfs = nfsClaimName(s.NFSPVName)
	}
	onShare := func(what, hostPath string) (string, error) {
		if s.NFSMountPath == "" {
			return "", fmt.Errorf("kubernetes runtime: nfs_pv_name %s is set but nfs_mount_path (where the broker mounts the share) is not", s.NFSPVName)
		}
		rel, err := filepath.Rel(s.NFSMountPath, hostPath)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			return "", fmt.Errorf("kubernetes runtime: %s %s is not on the NFS share mounted at %s", what, hostPath, s.NFSMountPath)
		}
		if rel == "." {
			rel = ""
		}
		return filepath.ToSlash(rel), nil
	}
	shareClaim := func() {
		claim(nfs, scopeShare, "", cmp.Or(s.NFSClaimSize, defaultNFSClaimSize), rwx)
		st.claims[len(st.claims)-1].Spec.VolumeName = s.NFSPVName
	}

	// The workspace.
	switch {
	case nfs != "":
		sub, err := onShare("workspace", spec.WorkDir)
		if err != nil {
			return storage{}, err
		}
		shareClaim()
		mount(nfs, workspacePath, sub, false)
		for _, m := range spec.Mounts {
			sub, err := onShare("mount", m.Source)
			if err != nil {
				return storage{}, err
			}
			at, link := gitMountPath(spec, mode, m)
			mount(nfs, at, sub, m.ReadOnly)
			if link != "" {
				st.addDotGit(link)
			}
		}
	case mode == modeShared:
		c := projectClaimName(spec.ProjectID, "workspace")
		claim(c, scopeProject, s.WorkspaceClass, cmp.Or(s.WorkspaceSize, defaultWorkspaceSize), rwx)
		mount(c, workspacePath, "", false)
	default:
		c := own + "-workspace"
		claim(c, scopeAgent, s.WorkspaceClass, cmp.Or(s.WorkspaceSize, defaultWorkspaceSize), rwo)
		mount(c, workspacePath, "", false)
		if mode == modeWorktree {
			// The base clone's git directory, at the fixed path the
			// worktree's .git file names in the pod.
			base := projectClaimName(spec.ProjectID, "base")
			claim(base, scopeProject, s.WorkspaceClass, cmp.Or(s.WorkspaceSize, defaultWorkspaceSize), rwx)
			for _, m := range spec.Mounts {
				at, link := gitMountPath(spec, mode, m)
				mount(base, at, "", m.ReadOnly)
				if link != "" {
					st.addDotGit(link)
				}
			}
		} else if len(spec.Mounts) > 0 {
			return storage{}, fmt.Errorf("kubernetes runtime: host mounts (%s) need an NFS share (nfs_pv_name) in %s mode", spec.Mounts[0].Source, cmp.Or(mode, modeEmpty))
		}
	}

	// The home.
	switch s.HomeStorage {
	case "", "emptydir":
		st.volumes = append(st.volumes, corev1.Volume{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mount("home", homePath, "", false)
	case "pvc":
		c := own + "-home"
		claim(c, scopeAgent, s.WorkspaceClass, cmp.Or(s.HomeSize, defaultHomeSize), rwo)
		mount(c, homePath, "", false)
	case "nfs":
		if nfs == "" {
			return storage{}, fmt.Errorf("kubernetes runtime: home_storage nfs needs nfs_pv_name")
		}
		sub, err := onShare("home", spec.HomeDir)
		if spec.Labels[runtime.LabelPersistentHome] == "true" {
			// The experiment's persistent home: named by the agent's
			// ID on the share, so every broker of it mounts the same
			// one, and outside any broker's data directory, so that a
			// move's cleanup of the source never touches it.
			sub, err = path.Join("homes", spec.AgentID), nil
		}
		if err != nil {
			return storage{}, err
		}
		shareClaim()
		mount(nfs, homePath, sub, false)
	}

	// The project's shared directory.
	backend := s.SharedDirStorage
	if backend == "" && s.SharedDirSize != "" {
		backend = "pvc"
	}
	switch backend {
	case "pvc":
		c := projectClaimName(spec.ProjectID, "shared-dir")
		claim(c, scopeProject, s.SharedDirClass, cmp.Or(s.SharedDirSize, defaultSharedDirSize), rwx)
		mount(c, sharedDirPath, "", false)
	case "nfs":
		if nfs == "" {
			return storage{}, fmt.Errorf("kubernetes runtime: shared_dir_storage nfs needs nfs_pv_name")
		}
		shareClaim()
		mount(nfs, sharedDirPath, path.Join("shared-dirs", cmp.Or(spec.ProjectID, "global")), false)
	}
	return st, nil
}

// newClaim is a claim the runtime creates when it is missing. An empty
// class leaves the cluster's default storage class to decide, except for
// the share's claim, whose empty class ("") pins it to its named volume.
func newClaim(name, scope, class, size string, modes []corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelClaimScope: scope}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if class != "" || scope == scopeShare {
		c.Spec.StorageClassName = &class
	}
	return c
}
