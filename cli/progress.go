package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Long work says so: a step that has taken slowAfter prints what it is
// waiting for on stderr, and again every slowEvery, so a first start that
// pulls an image or builds a home is never a silent terminal.
const (
	slowAfter = 2 * time.Second
	slowEvery = 5 * time.Second
)

// slowNote prints "what (Ns)" on w once the work has taken slowAfter,
// then every slowEvery, until the returned stop is called (which prints
// how long it took, when it had said anything).
func slowNote(w io.Writer, what string) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	var mu sync.Mutex
	said := false
	go func() {
		t := time.NewTimer(slowAfter)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				fmt.Fprintf(w, "%s (%s)\n", what, time.Since(start).Round(time.Second))
				said = true
				mu.Unlock()
				t.Reset(slowEvery)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			mu.Lock()
			defer mu.Unlock()
			if said {
				fmt.Fprintf(w, "done after %s\n", time.Since(start).Round(100*time.Millisecond))
			}
		})
	}
}
