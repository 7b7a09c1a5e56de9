package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// MarkerFile is the export identity marker: a random ID the first broker
// to use an export writes in its subpath_root, and every broker reads
// through its own mount. Two brokers whose settings name the same export
// but whose mounts lead to different directories read different markers
// (or one finds none and writes its own), so a move between them is
// refused on same_export instead of losing the workspace.
const MarkerFile = ".scion-export-id"

// Where an agent's workspace is, as recorded at each start.
const (
	PlacementExport = "export" // on the workspace export, seen by every broker mounting it
	PlacementLocal  = "local"  // on this broker's own disk
)

// Export is a broker's NFS workspace share: Storage names it as every
// broker of the export configures it (server, export, subpath_root, and
// pv_name for Kubernetes claims), Root is where it is on this host
// (mount_path/subpath_root).
type Export struct {
	Storage Storage
	Root    string
}

// PerAgent reports whether per-agent workspaces (clone-per-agent,
// empty-per-agent) are on the export too: with a share that Kubernetes
// pods mount through a claim (pv_name), every workspace the broker makes
// is on it, at <Root>/agents/<agentID>/workspace, so that another broker
// of the export finds it at the same place and its pod names the same
// claim and sub-path. Elsewhere they stay on the broker's disk (a
// container mounts a directory of the host it runs on).
func (e *Export) PerAgent() bool { return e != nil && e.Storage.PVName != "" }

// markerLen is the marker's length: 16 random bytes, hex.
const markerLen = 32

// Identify returns the export's identity marker, writing one when the
// subpath_root has none. The marker is written whole into a file of its
// own and then linked into place, which fails if a marker is there: two
// brokers that reach an unmarked export at once agree on the one linked
// first, and no broker ever reads a marker half written. A subpath_root
// that does not exist is an error: the export is not mounted there, and
// creating it would mark the local disk instead.
func (e *Export) Identify() (string, error) {
	if err := e.checkRoot(); err != nil {
		return "", err
	}
	path := filepath.Join(e.Root, MarkerFile)
	id, err := readMarker(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	var b [markerLen / 2]byte
	_, _ = rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	f, err := os.CreateTemp(e.Root, MarkerFile+".tmp-")
	if err != nil {
		return "", fmt.Errorf("workspace export %s: write the identity marker: %w", e.Root, err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(id + "\n")
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return readMarker(path) // another broker's came first
	case err != nil:
		return "", fmt.Errorf("workspace export %s: write the identity marker: %w", e.Root, err)
	}
	return id, nil
}

// checkRoot refuses a root that is not there (the export is not mounted:
// nothing is ever made in its place on the local disk) or that is not a
// plain directory (a symlink someone with write access to the export put
// there would lead the broker elsewhere on its host).
func (e *Export) checkRoot() error {
	fi, err := os.Lstat(e.Root)
	if err != nil {
		return fmt.Errorf("workspace export %s: %w (is the export mounted?)", e.Root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace export %s is not a directory (a symlink is refused)", e.Root)
	}
	return nil
}

// Usable checks, before a workspace is made on the export, that it is
// mounted and marked: its root a plain directory holding a marker. A
// broker whose export went away makes nothing on its local disk in its
// place.
func (e *Export) Usable() error {
	if err := e.checkRoot(); err != nil {
		return err
	}
	_, err := readMarker(filepath.Join(e.Root, MarkerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace export %s holds no %s: is the export mounted?", e.Root, MarkerFile)
	}
	return err
}

// readMarker reads and checks a marker (bounded: it is a file on a shared
// export that anyone with write access there could replace).
// It is opened without following a symlink and without blocking (a FIFO
// put there would otherwise hang every hello), and must be a regular file.
func readMarker(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("%s is a symlink, not an export identity: remove it only if no broker uses the export", path)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (err %v): remove it only if no broker uses the export", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, markerLen+2))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	id := strings.TrimSpace(string(b))
	if len(id) != markerLen || strings.Trim(id, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%s holds no export identity (want %d hex digits): remove it only if no broker uses the export", path, markerLen)
	}
	return id, nil
}

// Report is the export's storage as the broker reports it: its settings,
// the marker it read through its mount and whether the mount is usable.
// It waits at most identifyTimeout for the export: a hung NFS mount must
// not keep the broker from saying hello (its local agents included), and
// an export that does not answer in time is reported unhealthy.
func (e *Export) Report() Storage {
	s := e.Storage
	s.Type = StorageNFS
	type answer struct {
		id  string
		err error
	}
	done := make(chan answer, 1)
	go func() { id, err := e.Identify(); done <- answer{id, err} }()
	select {
	case a := <-done:
		s.ExportID, s.Healthy = a.id, a.err == nil
	case <-time.After(identifyTimeout):
	}
	return s
}

// identifyTimeout bounds Report's wait for the export.
const identifyTimeout = 3 * time.Second
