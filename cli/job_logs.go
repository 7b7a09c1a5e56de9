package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// jobLogTailLines is how much of a failed Job's log `job run` shows.
const jobLogTailLines = 20

// logWriter prints a Job's log snapshots as one growing stream: the Hub
// keeps each snapshot's tail (api.MaxJobLogBytes), so a new snapshot is
// the old one with more at its end, or, once the log outgrew the tail, a
// window that slid past what was printed.
type logWriter struct {
	seen string // the last snapshot printed
	// at is the Job's UpdatedAt when it was read: a capped log keeps its
	// size as it slides, so a change of the record is what says "read".
	at time.Time
}

// overlapProbe is how much of the end of the last snapshot is looked for
// in a slid window.
const overlapProbe = 512

func (lw *logWriter) write(w io.Writer, snap string, at time.Time) {
	out := logDelta(lw.seen, snap)
	lw.seen, lw.at = snap, at
	if out == "" {
		return
	}
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	fmt.Fprint(w, out)
}

// logDelta is what snap has that seen, the snapshot before it, did not.
func logDelta(seen, snap string) string {
	if snap == "" {
		return ""
	}
	if strings.HasPrefix(snap, seen) {
		return snap[len(seen):]
	}
	probe := seen[max(0, len(seen)-overlapProbe):]
	if probe != "" {
		if i := strings.LastIndex(snap, probe); i >= 0 {
			return snap[i+len(probe):]
		}
	}
	// Nothing in common (the log was replaced, or grew by more than a
	// window between two reads): say so, then the whole snapshot.
	return "[... log lines skipped ...]\n" + snap
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimSuffix(s, "\n")
	i := len(s)
	for range n {
		j := strings.LastIndexByte(s[:i], '\n')
		if j < 0 {
			return s + "\n"
		}
		i = j
	}
	return s[i+1:] + "\n"
}
