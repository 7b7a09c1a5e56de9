package cli

import (
	"strings"
	"testing"
)

// TestLogDelta: each new snapshot prints only what is new, also once the
// kept tail slides past what was printed.
func TestLogDelta(t *testing.T) {
	long := strings.Repeat("x", 600) + "\n"
	for _, tc := range []struct{ name, seen, snap, want string }{
		{"first", "", "a\nb\n", "a\nb\n"},
		{"grown", "a\nb\n", "a\nb\nc\n", "c\n"},
		{"unchanged", "a\nb\n", "a\nb\n", ""},
		{"empty snapshot", "a\n", "", ""},
		{"slid", "old\n" + long + "p\n", long + "p\nq\n", "q\n"},
		{"replaced", "a\nb\n", "z\n", "[... log lines skipped ...]\nz\n"},
	} {
		if got := logDelta(tc.seen, tc.snap); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := lastLines("1\n2\n3\n4\n", 2); got != "3\n4\n" {
		t.Errorf("lastLines: %q", got)
	}
	if got := lastLines("1\n2", 5); got != "1\n2\n" {
		t.Errorf("lastLines short: %q", got)
	}
}
