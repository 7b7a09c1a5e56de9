package keylock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestOneAtATimePerKey(t *testing.T) {
	var l Locks
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := l.Lock(context.Background(), "a")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d holders at once", most.Load())
	}
	if l.Len() != 0 {
		t.Fatalf("%d entries left", l.Len())
	}
}

func TestOtherKeysDoNotWaitAndContextEndsAWait(t *testing.T) {
	var l Locks
	unlock, _ := l.Lock(context.Background(), "a")
	u2, err := l.Lock(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	u2()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(ctx, "a"); err == nil {
		t.Fatal("a held lock was taken twice")
	}
	unlock()
	if l.Len() != 0 {
		t.Fatalf("%d entries left", l.Len())
	}
}
