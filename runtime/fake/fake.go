// Package fake is an in-memory runtime.Runtime for logic tests and
// benchmarks of the broker and Hub. Nothing runs: containers are records
// that move through the runtime states, write a configurable line to their
// log when started, and exit when stopped or when a test calls
// SimulateExit. Test hooks inject errors (FailNext) and latency
// (SetLatency); Calls counts the calls of each method.
//
// The simulated "engine" holding the containers outlives a Runtime:
// Restart returns a second Runtime over the same containers, the way a
// broker restart finds its Docker containers still there.
package fake

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scion-go/scion/runtime"
)

// Exit codes the fake reports, mirroring a shell's 128+signal for a process
// that died from SIGTERM or SIGKILL.
const (
	ExitCodeTerm = 143
	ExitCodeKill = 137
)

// eventBuffer is how many events an unread Events channel holds before
// further events are dropped. Events are a hint; Inventory is the truth.
const eventBuffer = 1024

// ErrClosed is returned by every method of a closed Runtime.
var ErrClosed = errors.New("fake runtime: closed")

// Runtime is the fake runtime. The zero value is not usable; call New.
type Runtime struct {
	eng    *engine
	events chan runtime.Event
	closed atomic.Bool
	hooks  hooks
}

var _ runtime.Runtime = (*Runtime)(nil)

// engine is the state shared by a Runtime and the Runtimes Restart made
// from it. One mutex guards everything: critical sections are a few map
// operations, so sharding would cost more than it saves.
type engine struct {
	mu          sync.Mutex
	containers  map[string]*container
	subscribers map[*Runtime]struct{} // open Runtimes, for events
	startOutput func(runtime.Spec) string
	ignoreTerm  func(runtime.Spec) bool
	calls       callCounts
}

type container struct {
	spec   runtime.Spec
	labels map[string]string
	status runtime.Status // Labels left nil; filled in by snapshot
	log    []byte
	// size is the terminal size an attachment last set (zero: none).
	size runtime.TermSize
	// changed is closed (and cleared) whenever log or status changes, to
	// wake log followers. It is only made when someone waits on it, so
	// containers nobody follows cost nothing extra.
	changed chan struct{}
	deleted bool
}

// New returns an empty fake runtime.
func New() *Runtime {
	eng := &engine{
		containers:  make(map[string]*container),
		subscribers: make(map[*Runtime]struct{}),
		startOutput: func(s runtime.Spec) string { return "fake agent " + s.AgentID + " started\n" },
		ignoreTerm:  func(runtime.Spec) bool { return false },
		calls:       newCallCounts(),
	}
	return newRuntime(eng)
}

func newRuntime(eng *engine) *Runtime {
	r := &Runtime{eng: eng, events: make(chan runtime.Event, eventBuffer)}
	eng.mu.Lock()
	eng.subscribers[r] = struct{}{}
	eng.mu.Unlock()
	return r
}

// Restart returns a new Runtime over r's containers, as a broker restart
// would see them. Hooks are not carried over. r itself stays usable until
// closed; both receive events.
func (r *Runtime) Restart() *Runtime { return newRuntime(r.eng) }

// SetStartOutput sets what a container writes to its log each time it
// starts. The default is "fake agent <id> started\n". f is called once per
// actual start, without the runtime's lock held, so it may block or call
// the runtime.
func (r *Runtime) SetStartOutput(f func(spec runtime.Spec) string) {
	r.eng.mu.Lock()
	r.eng.startOutput = f
	r.eng.mu.Unlock()
}

// SetIgnoreTerm makes the containers for which f returns true behave like
// a process that ignores SIGTERM: Stop waits out the whole grace period
// before "killing" them with ExitCodeKill. f is called without the
// runtime's lock held.
func (r *Runtime) SetIgnoreTerm(f func(spec runtime.Spec) bool) {
	r.eng.mu.Lock()
	r.eng.ignoreTerm = f
	r.eng.mu.Unlock()
}

// WriteLog appends text to the agent's log, as if the agent printed it.
func (r *Runtime) WriteLog(agentID, text string) error {
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	c, err := r.eng.get(agentID)
	if err != nil {
		return err
	}
	c.log = append(c.log, text...)
	c.notify()
	return nil
}

// SimulateExit makes a running or paused agent exit with code by itself,
// emitting an Event like a real runtime noticing its process end.
func (r *Runtime) SimulateExit(agentID string, code int) error {
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	c, err := r.eng.get(agentID)
	if err != nil {
		return err
	}
	if !c.live() {
		return fmt.Errorf("fake: agent %q is %s, not running", agentID, c.status.State)
	}
	r.eng.exit(c, code)
	return nil
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return "fake" }

// Events implements runtime.Runtime. Events are delivered for every exit
// (SimulateExit or Stop), not for Delete. When the channel's buffer is full
// further events are dropped rather than blocking the runtime.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// Close implements runtime.Runtime: it closes the Events channel and makes
// further calls fail. The containers live on for Runtimes from Restart.
func (r *Runtime) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.eng.mu.Lock()
	delete(r.eng.subscribers, r)
	close(r.events)
	r.eng.mu.Unlock()
	return nil
}

// get returns the agent's container. Callers hold e.mu.
func (e *engine) get(agentID string) (*container, error) {
	c, ok := e.containers[agentID]
	if !ok {
		return nil, fmt.Errorf("fake: agent %q: %w", agentID, runtime.ErrNotFound)
	}
	return c, nil
}

// exit moves c to exited with code and tells every open Runtime. Callers
// hold e.mu.
func (e *engine) exit(c *container, code int) {
	c.status.State = runtime.StateExited
	c.status.ExitCode = &code
	c.status.FinishedAt = time.Now()
	c.notify()
	ev := runtime.Event{Status: c.snapshot()}
	for r := range e.subscribers {
		select {
		case r.events <- ev:
		default: // a consumer that stopped reading must not stall the runtime
		}
	}
}

// live reports whether c is running or paused, i.e. has a "process".
func (c *container) live() bool {
	return c.status.State == runtime.StateRunning || c.status.State == runtime.StatePaused
}

// notify wakes the log followers of c. Callers hold the engine's mutex.
func (c *container) notify() {
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// snapshot returns a copy of c's status that the caller may keep and
// modify. Callers hold the engine's mutex.
func (c *container) snapshot() runtime.Status {
	st := c.status
	st.Labels = make(map[string]string, len(c.labels))
	for k, v := range c.labels {
		st.Labels[k] = v
	}
	if st.ExitCode != nil {
		code := *st.ExitCode
		st.ExitCode = &code
	}
	return st
}
