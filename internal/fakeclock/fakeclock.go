// Package fakeclock is a clock that tests move by hand, for code that
// takes its time from a now func() time.Time (the Hub's, a broker's
// idempotency store's): a test of a lifetime advances the clock past it
// instead of sleeping through it.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a settable time. Its zero value is not usable; use New.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads start until it is advanced.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time; pass c.Now where code takes a now func.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
