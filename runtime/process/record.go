package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scion-go/scion/runtime"
)

// Files in an agent's directory.
const (
	recordFile = "record.json"
	logFile    = "output.log"
	exitFile   = "exitcode"
	lockFile   = "lock"
)

// recordVersion is bumped on incompatible changes of record.
const recordVersion = 1

// record is what the runtime persists about an agent (record.json).
type record struct {
	Version   int               `json:"version"`
	Spec      runtime.Spec      `json:"spec"`
	Labels    map[string]string `json:"labels"`
	CreatedAt time.Time         `json:"createdAt"`
	// Launch is the nonce of the latest launch, saved before its process
	// starts and carried in that process's environment (EnvLaunch), so
	// that a restarted runtime finds the process even when the broker died
	// before it could record Proc.
	Launch string `json:"launch,omitempty"`
	// The latest launch; zero until the first Start.
	Proc      procID    `json:"proc,omitzero"`
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// validID reports whether id can name an agent directory: it must stay a
// single path element inside the state directory, and not start with a
// dot (reserved for the runtime's own entries, like tombstones).
func validID(id string) bool {
	return id != "" && len(id) <= 255 && !strings.HasPrefix(id, ".") &&
		!strings.ContainsAny(id, "/\x00")
}

func notFound(id string) error {
	return fmt.Errorf("process runtime: agent %q: %w", id, runtime.ErrNotFound)
}

func (r *Runtime) agentDir(id string) string   { return filepath.Join(r.dir, id) }
func (r *Runtime) path(id, file string) string { return filepath.Join(r.dir, id, file) }

// load reads the agent's record; an unknown agent is ErrNotFound.
func (r *Runtime) load(id string) (*record, error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	b, err := os.ReadFile(r.path(id, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("process runtime: agent %q: bad record: %w", id, err)
	}
	if rec.Version != recordVersion {
		return nil, fmt.Errorf("process runtime: agent %q: record version %d, want %d", id, rec.Version, recordVersion)
	}
	return &rec, nil
}

// save writes the agent's record atomically, so that readers (which take
// no lock) never see half of it.
func (r *Runtime) save(id string, rec *record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(r.path(id, recordFile), b)
}

// writeAtomic replaces path with data via a temporary file and rename.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// readExit returns the exit status the wrapper (or the runtime) recorded
// and when, with ok false if there is none.
func (r *Runtime) readExit(id string) (code int, at time.Time, ok bool) {
	f := r.path(id, exitFile)
	b, err := os.ReadFile(f)
	if err != nil {
		return 0, time.Time{}, false
	}
	code, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, time.Time{}, false
	}
	if fi, err := os.Stat(f); err == nil {
		at = fi.ModTime()
	}
	return code, at, true
}

// writeExitIfMissing records code as the agent's exit status unless the
// wrapper already did. Callers hold the agent's lock, and the wrapper is
// dead, so nobody else writes the file meanwhile.
func (r *Runtime) writeExitIfMissing(id string, code int) {
	if _, _, ok := r.readExit(id); ok {
		return
	}
	_ = writeAtomic(r.path(id, exitFile), []byte(strconv.Itoa(code)+"\n"))
}

// lock takes the agent's exclusive lock, serialising Start, Stop, Delete
// and friends, also between two Runtimes on the same directory. It is
// ErrNotFound if the agent's directory does not exist (or is deleted while
// we wait).
func (r *Runtime) lock(id string) (unlock func(), err error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	path := r.path(id, lockFile)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notFound(id)
		}
		if err != nil {
			return nil, err
		}
		if err := flock(f); err != nil {
			f.Close()
			return nil, err
		}
		// Delete renames the directory away while holding the lock; if that
		// happened while we waited, our lock is on a dead file.
		held, err1 := f.Stat()
		cur, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, cur) {
			return func() { f.Close() }, nil
		}
		f.Close()
		if errors.Is(err2, fs.ErrNotExist) {
			return nil, notFound(id)
		}
	}
}

func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
