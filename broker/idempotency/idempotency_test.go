package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/scion-go/scion/api"
)

func TestDedupRunsOnceAndCoalesces(t *testing.T) {
	d := NewDedup(newMapStore())
	var runs atomic.Int32
	release := make(chan struct{})
	fn := func() (any, error) {
		runs.Add(1)
		<-release
		return map[string]int{"n": 1}, nil
	}
	var wg sync.WaitGroup
	results := make([]string, 5)
	for i := range results {
		wg.Go(func() {
			v, err := d.Do(context.Background(), "k", fn)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = string(v.(json.RawMessage))
		})
	}
	// The concurrent callers are parked on the flight (or will find the
	// stored result); let the one running finish.
	close(release)
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Fatalf("fn ran %d times, want 1", n)
	}
	v, _ := d.Do(context.Background(), "k", fn)
	for _, r := range append(results, string(v.(json.RawMessage))) {
		if r != `{"n":1}` {
			t.Fatalf("result %q, want {\"n\":1}", r)
		}
	}
}

func TestDedupRemembersOnlyFinalErrors(t *testing.T) {
	d := NewDedup(newMapStore())
	for _, tc := range []struct {
		err      error
		rerun    bool
		wantCode string
	}{
		{api.BadRequest("no"), false, api.CodeInvalidRequest},
		{api.NotFound(api.CodeAgentNotFound, "gone"), false, api.CodeAgentNotFound},
		{api.Errorf(api.CodeRuntimeError, "boom"), true, api.CodeRuntimeError},
		{errors.New("plain"), true, api.CodeInternal},
	} {
		key := fmt.Sprint(tc.err)
		var runs int
		fn := func() (any, error) { runs++; return nil, tc.err }
		for range 2 {
			if _, err := d.Do(context.Background(), key, fn); !api.IsCode(err, tc.wantCode) {
				t.Fatalf("%v: got %v, want code %s", tc.err, err, tc.wantCode)
			}
		}
		if want := map[bool]int{false: 1, true: 2}[tc.rerun]; runs != want {
			t.Errorf("%v: ran %d times, want %d", tc.err, runs, want)
		}
	}
}

// A duplicate waiting on an attempt that failed transiently (its caller's
// channel dropped, say) makes its own attempt instead of inheriting that
// failure.
func TestDedupWaiterRetriesAfterTransientFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDedup(newMapStore())
		release := make(chan struct{})
		first, second := make(chan error, 1), make(chan error, 1)
		go func() {
			_, err := d.Do(context.Background(), "k", func() (any, error) {
				<-release
				return nil, api.Errorf(api.CodeBrokerUnavailable, "request cancelled")
			})
			first <- err
		}()
		synctest.Wait() // the first attempt is running
		go func() {
			_, err := d.Do(context.Background(), "k", func() (any, error) { return "ok", nil })
			second <- err
		}()
		synctest.Wait() // the duplicate is parked on it
		close(release)
		if err := <-first; !api.IsCode(err, api.CodeBrokerUnavailable) {
			t.Fatalf("first: %v", err)
		}
		if err := <-second; err != nil {
			t.Fatalf("second inherited the failure: %v", err)
		}
	})
}
