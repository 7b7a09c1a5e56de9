package broker

import (
	"testing"
	"time"
)

func TestBackoffTable(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 10 * time.Second
	for _, tc := range []struct {
		attempt int
		r       float64
		want    time.Duration
	}{
		{0, 0, 0},
		{0, 0.5, 50 * time.Millisecond},
		{1, 0.5, 100 * time.Millisecond},
		{3, 0.5, 400 * time.Millisecond},
		{6, 0.5, 3200 * time.Millisecond},
		{7, 0.5, 5 * time.Second}, // 12.8s capped at 10s
		{1000, 0.5, 5 * time.Second},
		{2, 1, 0}, // r outside [0,1) is treated as 0
		{2, -1, 0},
	} {
		if got := backoffDelay(tc.attempt, lo, hi, tc.r); got != tc.want {
			t.Errorf("backoffDelay(%d, r=%v) = %v, want %v", tc.attempt, tc.r, got, tc.want)
		}
	}
}

// TestBackoffProperties checks the invariants over many attempts and
// random draws: within [0, max), and the window never shrinks.
func TestBackoffProperties(t *testing.T) {
	for _, bounds := range [][2]time.Duration{
		{100 * time.Millisecond, 10 * time.Second},
		{time.Millisecond, time.Millisecond},
		{3 * time.Millisecond, 1<<63 - 1}, // doubling must not overflow
		{0, 0},                            // nonsense config still gives a finite delay
	} {
		lo, hi := bounds[0], bounds[1]
		prevCeil := time.Duration(0)
		for attempt := range 100 {
			ceil := backoffDelay(attempt, lo, hi, 0.999999)
			if ceil < prevCeil {
				t.Fatalf("bounds %v: window shrank at attempt %d: %v < %v", bounds, attempt, ceil, prevCeil)
			}
			prevCeil = ceil
			for _, r := range []float64{0, 0.1, 0.5, 0.9, 0.999999} {
				d := backoffDelay(attempt, lo, hi, r)
				if d < 0 || d > max(hi, time.Millisecond) {
					t.Fatalf("bounds %v attempt %d r %v: delay %v out of range", bounds, attempt, r, d)
				}
			}
		}
	}
}
