package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Workspace storage backends (server.workspace_storage.backend).
const (
	StorageLocal = "local"
	StorageNFS   = "nfs"
)

// WorkspaceStorageSettings is server.workspace_storage: where the broker
// keeps agents' workspaces. With the nfs backend, the first share
// (nfs.shares[0]) holds them, under its subpath_root; two brokers that
// mount the same export there can move agents between them with the
// workspace in place (docs/moves.md).
type WorkspaceStorageSettings struct {
	// Backend is local (the default: the broker's data directory) or nfs.
	Backend string         `yaml:"backend,omitempty"`
	NFS     NFSSettings    `yaml:"nfs,omitempty"`
	Extra   map[string]any `yaml:",inline"`
}

// NFSSettings is server.workspace_storage.nfs.
type NFSSettings struct {
	Shares []NFSShare     `yaml:"shares,omitempty"`
	Extra  map[string]any `yaml:",inline"`
}

// NFSShare is one NFS share. Server, Export and SubpathRoot name it, the
// same on every broker of the export; MountPath is where this host has
// the export mounted (the broker mounts nothing itself: the host's fstab
// or the operator does), so the workspaces are under
// MountPath/SubpathRoot here. PVName is the PersistentVolume through
// which a Kubernetes broker's pods claim the share.
type NFSShare struct {
	Server      string         `yaml:"server,omitempty"`
	Export      string         `yaml:"export,omitempty"`
	SubpathRoot string         `yaml:"subpath_root,omitempty"`
	MountPath   string         `yaml:"mount_path,omitempty"`
	PVName      string         `yaml:"pv_name,omitempty"`
	Extra       map[string]any `yaml:",inline"`
}

// Resolve validates the settings and returns the share that holds the
// workspaces (nil for local storage).
func (w WorkspaceStorageSettings) Resolve() (*NFSShare, error) {
	return w.ResolveKey("server.workspace_storage")
}

// ResolveKey is Resolve for the settings under key (errors name it):
// server.shared_dir_storage has the same shape and rules.
func (w WorkspaceStorageSettings) ResolveKey(key string) (*NFSShare, error) {
	switch w.Backend {
	case "", StorageLocal:
		return nil, nil
	case StorageNFS:
	default:
		return nil, fmt.Errorf("%s.backend %q: want %s or %s", key, w.Backend, StorageLocal, StorageNFS)
	}
	if len(w.NFS.Shares) == 0 {
		return nil, fmt.Errorf("%s.nfs.shares: the nfs backend needs a share (shares[0] holds the workspaces)", key)
	}
	sh := w.NFS.Shares[0]
	for _, f := range []struct{ name, v string }{{"server", sh.Server}, {"export", sh.Export}, {"subpath_root", sh.SubpathRoot}, {"mount_path", sh.MountPath}} {
		if f.v == "" {
			return nil, fmt.Errorf("%s.nfs.shares[0].%s is required", key, f.name)
		}
		if len(f.v) > 1024 || strings.ContainsAny(f.v, "\x00\n") {
			return nil, fmt.Errorf("%s.nfs.shares[0].%s: not a usable value", key, f.name)
		}
	}
	for _, f := range []struct{ name, v string }{{"export", sh.Export}, {"mount_path", sh.MountPath}} {
		if !filepath.IsAbs(f.v) || filepath.Clean(f.v) != f.v {
			return nil, fmt.Errorf("%s.nfs.shares[0].%s %q: want a clean absolute path", key, f.name, f.v)
		}
	}
	// subpath_root is a path inside the export: relative or absolute (to
	// the export's root), never leaving it.
	rel := strings.TrimPrefix(sh.SubpathRoot, "/")
	if rel == "" || filepath.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s.nfs.shares[0].subpath_root %q: want a clean path inside the export", key, sh.SubpathRoot)
	}
	// One spelling for one directory: brokers compare it to decide that
	// they share an export ("/ws" and "ws" are the same subpath).
	sh.SubpathRoot = rel
	if sh.PVName != "" && len(validation.IsDNS1123Subdomain(sh.PVName)) > 0 {
		return nil, fmt.Errorf("%s.nfs.shares[0].pv_name %q: not a Kubernetes object name", key, sh.PVName)
	}
	return &sh, nil
}

// Root is the directory holding the workspaces on this host.
func (s *NFSShare) Root() string {
	return filepath.Join(s.MountPath, strings.TrimPrefix(s.SubpathRoot, "/"))
}
