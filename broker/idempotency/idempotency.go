// Package idempotency runs the broker's keyed commands at most once: a
// Store remembers the results of finished ones (the broker's is the
// FileStore, which survives a restart), and a Dedup answers a repeated key
// from the store and makes a duplicate that arrives while the first is
// running wait for it. Only final results are kept (successes and
// refusals), so the Hub's retry of a failed command gets another try.
package idempotency

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/scion-go/scion/api"
)

// Result is the recorded outcome of a keyed request: the JSON body of the
// answer, or the error. It is plain data so a durable store can persist it.
type Result struct {
	Body json.RawMessage `json:"body,omitempty"`
	Err  *api.Error      `json:"error,omitempty"`
}

// Store remembers the results of completed keyed requests. It is asked
// only about finished work; coalescing of requests still in flight is done
// in memory by Dedup, so a file-backed store only has to implement these
// two methods.
type Store interface {
	Get(key string) (Result, bool)
	Put(key string, r Result)
}

// Dedup runs keyed requests at most once: a key whose result is stored is
// answered from the store, and concurrent requests with the same key wait
// for the one already running instead of redoing its effect.
type Dedup struct {
	store Store

	mu       sync.Mutex
	inflight map[string]*flight
}

type flight struct {
	done chan struct{}
	res  Result
}

// NewDedup returns a Dedup over store.
func NewDedup(store Store) *Dedup {
	return &Dedup{store: store, inflight: map[string]*flight{}}
}

// Do runs fn once per key and returns its answer (an error as an
// *api.Error). An empty key runs fn unconditionally. A duplicate waiting on
// a running key returns ctx.Err() when ctx ends first.
func (d *Dedup) Do(ctx context.Context, key string, fn func() (any, error)) (any, error) {
	if key == "" {
		return fn()
	}
	for {
		if r, ok := d.store.Get(key); ok {
			return r.answer()
		}
		d.mu.Lock()
		f, running := d.inflight[key]
		if !running {
			// Check the store again under the lock: a flight that ended
			// between our Get and Lock has left the map but stored its
			// result.
			if r, ok := d.store.Get(key); ok {
				d.mu.Unlock()
				return r.answer()
			}
			f = &flight{done: make(chan struct{})}
			d.inflight[key] = f
		}
		d.mu.Unlock()
		if !running {
			return d.run(key, f, fn)
		}
		select {
		case <-f.done:
			if remember(f.res) {
				return f.res.answer()
			}
			// That attempt failed in a way a retry may fix (its caller
			// may have gone with a dropped channel): try again ourselves.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// run executes the flight f for key and publishes its result.
func (d *Dedup) run(key string, f *flight, fn func() (any, error)) (any, error) {
	f.res = record(fn())
	if remember(f.res) {
		d.store.Put(key, f.res)
	}
	d.mu.Lock()
	delete(d.inflight, key)
	d.mu.Unlock()
	close(f.done)
	return f.res.answer()
}

// record turns a handler's answer into a Result.
func record(v any, err error) Result {
	if err != nil {
		return Result{Err: api.AsError(err)}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Result{Err: api.Internal("encode result: %v", err)}
	}
	return Result{Body: b}
}

// remember reports whether a result is final. Successes and refusals of
// the request itself (4xx) are; runtime failures, timeouts and internal
// errors are not, so the Hub's retry with the same key gets another try
// (a failed create has been cleaned up, so retrying it is safe).
func remember(r Result) bool {
	if r.Err == nil {
		return true
	}
	st := r.Err.Status
	if st == 0 {
		st = api.StatusForCode(r.Err.Code)
	}
	return st >= 400 && st < 500 && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests
}

func (r Result) answer() (any, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	return r.Body, nil
}
