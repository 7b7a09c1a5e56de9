package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// A project's shared directory: one directory every agent of the project
// sees at SharedDirPath (its path in SCION_SHARED_DIR), for what agents
// hand each other that is not the workspace. By default it is the
// broker's own (<data_dir>/projects/<projectID>/shared-dir), so agents on
// different brokers do not share it; with server.shared_dir_storage on
// nfs (Config.SharedDirs) it is <subpath_root>/shared-dirs/<projectID>
// on the export, the same directory for every broker that mounts it.
// The Kubernetes runtime has its own (a project claim, or the share's
// sub-path): the broker makes nothing for it.

// SharedDirPath is where a container agent finds its project's shared
// directory.
const SharedDirPath = "/scion/shared"

// hostFileRuntimes are the runtimes whose agents are given files of this
// host (the shared directory, the Hub's CA): a container runtime through
// a mount, the process runtime at the host path.
var hostFileRuntimes = map[string]bool{"docker": true, "process": true, "fake": true}

// sharedDir makes the project's shared directory and says how the agent
// sees it: the mount (none on the process runtime) and the path for its
// environment; neither on a runtime that keeps its own (Kubernetes).
func (b *Broker) sharedDir(spec wire.AgentSpec) (m *runtime.Mount, envPath string, err error) {
	if !hostFileRuntimes[b.rt.Name()] {
		return nil, "", nil
	}
	var dir string
	if e := b.cfg.SharedDirs; e != nil {
		// A broker whose export went away makes nothing on its local
		// disk in its place: its agents would stop sharing unseen.
		if err := e.Usable(); err != nil {
			return nil, "", api.Errorf(api.CodeBrokerUnavailable, "project shared directory: %v", err)
		}
		if dir, err = mkdirsNoSymlink(e.Root, "shared-dirs", spec.ProjectID); err != nil {
			return nil, "", fmt.Errorf("project shared directory on the export: %w", err)
		}
	} else {
		dir = filepath.Join(b.layout.ProjectDir(spec.ProjectID), "shared-dir")
		if err := b.layout.SafeDir(dir); err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", fmt.Errorf("project shared directory: %w", err)
		}
		if err := b.layout.SafeDir(dir); err != nil { // made through no link
			return nil, "", err
		}
		_ = os.Chmod(dir, 0o777) // every agent of the project writes it, whatever its user
	}
	if b.rt.Name() == "process" {
		return nil, dir, nil
	}
	return &runtime.Mount{Source: dir, Target: SharedDirPath}, SharedDirPath, nil
}

// mkdirsNoSymlink makes root/elems... one directory at a time, refusing
// any that is a symlink or not a directory: on a shared export anyone
// with write access there could plant a link that would have the runtime
// mount another directory of this host into agents. The last directory
// is writable by every agent of the project, whatever its user; the ones
// above it are sticky, so that one broker's user (another host's) may add
// a project's directory there but not rename or replace another's.
func mkdirsNoSymlink(root string, elems ...string) (string, error) {
	dir := root
	for i, el := range elems {
		dir = filepath.Join(dir, el)
		mode := os.FileMode(0o777)
		if i < len(elems)-1 {
			mode |= os.ModeSticky
		}
		if err := os.Mkdir(dir, 0o777); err == nil {
			_ = os.Chmod(dir, mode) // past the umask
		} else if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s is not a directory (a symlink is refused)", dir)
		}
	}
	return dir, nil
}
