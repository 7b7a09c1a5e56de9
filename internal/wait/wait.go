// Package wait is the one polling helper of the tests: it waits for a
// state that no channel announces, and when the state never comes it
// fails with what was last observed. Tests wait on conditions, never on
// sleeps.
package wait

import (
	"fmt"
	"testing"
	"time"
)

// Interval is the polling interval for callers with no reason to choose
// another.
const Interval = 10 * time.Millisecond

// Eventually calls cond every interval (Interval when 0) until it returns
// nil, and returns how long that took. When timeout passes first it fails
// t with cond's last error, which should say what was observed ("broker b1
// is offline, want online"). cond may itself fail t (a process that died,
// say): Eventually calls it on the caller's goroutine.
func Eventually(t testing.TB, timeout, interval time.Duration, cond func() error) time.Duration {
	t.Helper()
	took, err := Until(timeout, interval, cond)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// Until is Eventually for callers that must not fail a test (a cleanup
// that reports, a helper off the test's goroutine): it returns how long
// the wait took, or an error that names the timeout and cond's last
// error.
func Until(timeout, interval time.Duration, cond func() error) (time.Duration, error) {
	if interval <= 0 {
		interval = Interval
	}
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := cond()
		if err == nil {
			return time.Since(start), nil
		}
		if !time.Now().Before(deadline) {
			return time.Since(start), fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(min(interval, time.Until(deadline)+time.Millisecond))
	}
}

// Consistently calls cond every interval (Interval when 0) for d and fails
// t at the first error: a state that must hold over a window, not just at
// one instant.
func Consistently(t testing.TB, d, interval time.Duration, cond func() error) {
	t.Helper()
	if interval <= 0 {
		interval = Interval
	}
	start := time.Now()
	for {
		if err := cond(); err != nil {
			t.Fatalf("stopped holding after %v (of %v): %v", time.Since(start).Round(time.Millisecond), d, err)
		}
		left := d - time.Since(start)
		if left <= 0 {
			return
		}
		time.Sleep(min(interval, left))
	}
}
