package wait

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeT records a failure and ends its goroutine, as testing.T does.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatal(args ...any) {
	f.failed = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f on its own goroutine, as the testing package runs a test.
func run(f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	<-done
}

func TestEventuallyReturnsWhenTheConditionHolds(t *testing.T) {
	n := 0
	took := Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return fmt.Errorf("n = %d", n)
		}
		return nil
	})
	if n != 3 || took > 5*time.Second {
		t.Fatalf("called %d times, took %v", n, took)
	}
}

func TestEventuallyFailsWithTheLastObservedValue(t *testing.T) {
	ft := &fakeT{}
	n := 0
	start := time.Now()
	run(func() {
		Eventually(ft, 30*time.Millisecond, 5*time.Millisecond, func() error {
			n++
			return fmt.Errorf("count is %d, want 0", n)
		})
	})
	if !strings.Contains(ft.failed, fmt.Sprintf("count is %d, want 0", n)) || !strings.Contains(ft.failed, "30ms") {
		t.Fatalf("failure %q after %d calls", ft.failed, n)
	}
	if d := time.Since(start); d < 30*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v, want about 30ms", d)
	}
}

func TestUntilWrapsTheLastError(t *testing.T) {
	last := errors.New("last")
	_, err := Until(time.Millisecond, 0, func() error { return last })
	if !errors.Is(err, last) {
		t.Fatalf("err = %v", err)
	}
}

func TestConsistently(t *testing.T) {
	n := 0
	Consistently(t, 20*time.Millisecond, time.Millisecond, func() error { n++; return nil })
	if n < 2 {
		t.Fatalf("checked %d times in 20ms", n)
	}
	ft := &fakeT{}
	n = 0
	run(func() {
		Consistently(ft, time.Second, time.Millisecond, func() error {
			if n++; n == 3 {
				return errors.New("broke")
			}
			return nil
		})
	})
	if !strings.Contains(ft.failed, "broke") || n != 3 {
		t.Fatalf("failure %q after %d checks", ft.failed, n)
	}
}
