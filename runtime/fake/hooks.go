package fake

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// methods are the names FailNext and SetLatency accept.
var methods = map[string]bool{
	"Create": true, "Start": true, "Stop": true, "Suspend": true, "Resume": true,
	"Delete": true, "Inspect": true, "Logs": true, "Inventory": true,
	"Exec": true, "Attach": true,
}

// hooks holds the error and latency injections of one Runtime.
type hooks struct {
	// active is set once any hook was configured, so that the common,
	// hook-free path (benchmarks) skips the mutex entirely.
	active  atomic.Bool
	mu      sync.Mutex
	fail    map[string][]error
	latency map[string]time.Duration
}

func checkMethod(method string) {
	if method != "" && !methods[method] {
		panic(fmt.Sprintf("fake: unknown Runtime method %q", method))
	}
}

// FailNext makes the next call of method (e.g. "Start") return err without
// doing anything. Several calls queue up, one error per call. An unknown
// method name panics: it is a bug in the test.
func (r *Runtime) FailNext(method string, err error) {
	checkMethod(method)
	if method == "" {
		panic("fake: FailNext needs a method name")
	}
	h := &r.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail == nil {
		h.fail = make(map[string][]error)
	}
	h.fail[method] = append(h.fail[method], err)
	h.active.Store(true)
}

// SetLatency makes every call of method take at least d (or until its
// context ends). Method "" sets the latency of all methods that have none
// of their own; d of zero removes a latency.
func (r *Runtime) SetLatency(method string, d time.Duration) {
	checkMethod(method)
	h := &r.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.latency == nil {
		h.latency = make(map[string]time.Duration)
	}
	if d == 0 {
		delete(h.latency, method)
	} else {
		h.latency[method] = d
	}
	h.active.Store(true)
}

// counted are the methods Calls counts: those with hooks, and Exec and
// Attach.
var counted = []string{"Create", "Start", "Stop", "Suspend", "Resume", "Delete", "Inspect", "Logs", "Inventory", "Exec", "Attach"}

// callCounts counts calls per method. The map is filled once and only read
// afterwards, so counting takes no lock.
type callCounts map[string]*atomic.Int64

func newCallCounts() callCounts {
	c := make(callCounts, len(counted))
	for _, m := range counted {
		c[m] = new(atomic.Int64)
	}
	return c
}

// Calls returns how many times method (e.g. "Stop") was called on this
// Runtime or any other over the same containers (see Restart), including
// calls that failed. Tests use it to prove an effect happened exactly
// once. An unknown method name panics.
func (r *Runtime) Calls(method string) int {
	n, ok := r.eng.calls[method]
	if !ok {
		panic(fmt.Sprintf("fake: Calls: unknown Runtime method %q", method))
	}
	return int(n.Load())
}

// enter runs at the start of every Runtime method: it counts the call,
// refuses calls on a closed runtime, applies the method's latency and
// returns its injected error, if any.
func (r *Runtime) enter(ctx context.Context, method string) error {
	r.eng.calls[method].Add(1)
	if r.closed.Load() {
		return ErrClosed
	}
	if !r.hooks.active.Load() {
		return nil
	}
	h := &r.hooks
	h.mu.Lock()
	d, ok := h.latency[method]
	if !ok {
		d = h.latency[""]
	}
	var err error
	if q := h.fail[method]; len(q) > 0 {
		err, h.fail[method] = q[0], q[1:]
	}
	h.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}
