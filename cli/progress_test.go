package cli

import (
	"strings"
	"testing"
	"time"
)

// A step past slowAfter says what it waits for, and when it is done; a
// quick one says nothing.
func TestSlowNote(t *testing.T) {
	var quick syncBuf
	stop := slowNote(&quick, "quick")
	stop()
	stop() // twice is harmless
	if quick.String() != "" {
		t.Fatalf("a quick step printed %q", quick.String())
	}
	var slow syncBuf
	stop = slowNote(&slow, "pulling")
	time.Sleep(slowAfter + 300*time.Millisecond)
	stop()
	out := slow.String()
	if !strings.HasPrefix(out, "pulling (2s)\n") || !strings.Contains(out, "done after 2.") {
		t.Fatalf("a slow step printed %q", out)
	}
}
