// Package process is a runtime.Runtime that runs each agent as a plain
// child process of the broker host.
//
// THIS RUNTIME IS NOT A SANDBOX. Agents run with the broker's user, see the
// whole filesystem and network, and can do anything that user can. It is
// the fallback for hosts without a Docker Engine, for development and for
// tests; never point it at untrusted agents.
//
// # State
//
// Everything the runtime knows lives under the state directory given to
// New, one sub-directory per agent:
//
//	<stateDir>/<agentID>/record.json  spec, labels, pid + start time (0600: Env holds secrets)
//	<stateDir>/<agentID>/output.log   the agent's stdout and stderr, appended
//	<stateDir>/<agentID>/exitcode     the agent's exit status, once it has exited
//	<stateDir>/<agentID>/lock         flock(2) serialising changes to the agent
//
// An agent without a WorkDir runs in <stateDir>/<agentID>/work, which is
// deleted with it; a given WorkDir (created if missing) and HomeDir belong
// to the caller and are never removed.
//
// State is never cached in memory: Inspect and Inventory derive it from the
// record and /proc each time, so a new Runtime over the same directory (a
// restarted broker) sees exactly what the old one saw.
//
// # Surviving a broker restart
//
// Agents are started in their own session (setsid), with stdin from
// /dev/null and output into output.log rather than a pipe, so neither the
// broker's death nor a signal to its terminal or process group reaches
// them. A process is identified by its pid plus its start time (field 22 of
// /proc/<pid>/stat) and the host's boot ID, so a recycled pid is never
// mistaken for the agent, and never signalled. (Under systemd, run the
// broker with KillMode=process, or stopping the service kills its whole
// cgroup, agents included.)
//
// A launch is recorded before it starts: Start saves a fresh launch nonce
// in the record, then starts the wrapper with the state directory and
// "<agentID>/<nonce>" in its environment (EnvStateDir, EnvLaunch), which
// everything it starts inherits. A broker killed between the start and
// the saving of the pid therefore leaves a process that the next Runtime
// recognises: New scans /proc and adopts the wrapper of a recorded launch,
// and kills marked processes of unknown agents or of earlier launches.
// Delete kills every process carrying the agent's marker, not only the
// wrapper's process group, so an agent's background children go with it.
//
// # Exit codes
//
// After a broker restart an agent is no longer the broker's child and its
// exit status cannot be waited for. So the runtime does not exec the
// agent's command directly: it runs it under a small /bin/sh wrapper that
// waits for the command and writes its exit status to the exitcode file,
// whoever is (or is not) watching. The command is passed as positional
// arguments ("$@"), so it is never re-parsed by the shell and needs no
// quoting. The wrapper traps SIGTERM, SIGINT and SIGHUP so that a stop
// request, which goes to the whole process group, ends the agent but not
// the wrapper before it has recorded the status; the agent itself gets the
// signals' default behaviour (caught signals are reset by exec). Only
// SIGKILL can end the wrapper early: then the runtime records 137 itself
// when it sent the kill (Stop, or the wait status when the wrapper is its
// own child), and otherwise reports the agent exited with an unknown code.
package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/scion-go/scion/runtime"
)

// eventBuffer is how many events an unread Events channel holds before
// further events are dropped. Events are a hint; Inventory is the truth.
const eventBuffer = 1024

// ErrClosed is returned by the methods of a closed Runtime.
var ErrClosed = errors.New("process runtime: closed")

// Runtime runs agents as local, unsandboxed processes. See the package
// documentation.
type Runtime struct {
	dir    string
	events chan runtime.Event

	mu      sync.Mutex // guards closed, sending on and closing events, and watched
	closed  bool
	watched map[string]procID // adopted agents whose exit the poller reports
	stop    chan struct{}     // closed by Close, ends the poller
	wg      sync.WaitGroup    // the poller
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a runtime keeping its state under stateDir, creating it if
// needed. Agents recorded there by an earlier Runtime (before a broker
// restart) are adopted: their processes are watched so that their exits
// are reported on Events.
func New(stateDir string) (*Runtime, error) {
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	r := &Runtime{
		dir:     dir,
		events:  make(chan runtime.Event, eventBuffer),
		watched: make(map[string]procID),
		stop:    make(chan struct{}),
	}
	r.removeTombstones()
	r.reconcile()
	if err := r.adopt(); err != nil {
		return nil, err
	}
	return r, nil
}

// StateDir returns the runtime's state directory (absolute).
func (r *Runtime) StateDir() string { return r.dir }

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return "process" }

// Events implements runtime.Runtime. An event is sent whenever an agent's
// process ends, whatever the cause (including Stop), except through
// Delete. When the buffer is full further events are dropped rather than
// blocking the runtime.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// Close implements runtime.Runtime. It stops reporting events and closes
// the Events channel; the agents keep running, to be adopted by the next
// Runtime over the same state directory.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.stop)
	r.mu.Unlock()
	r.wg.Wait()
	r.mu.Lock()
	close(r.events)
	r.mu.Unlock()
	return nil
}

func (r *Runtime) checkOpen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return nil
}

// emit sends an event unless the runtime is closed or nobody reads.
func (r *Runtime) emit(st runtime.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	select {
	case r.events <- runtime.Event{Status: st}:
	default:
	}
}

// tombstonePrefix marks agent directories being deleted: Delete renames an
// agent's directory before removing it, so that the agent disappears
// atomically. Agent IDs cannot start with a dot, so these never collide.
const tombstonePrefix = ".deleted-"

// removeTombstones finishes deletions a crash interrupted.
func (r *Runtime) removeTombstones() {
	entries, _ := os.ReadDir(r.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tombstonePrefix) {
			os.RemoveAll(filepath.Join(r.dir, e.Name()))
		}
	}
}
