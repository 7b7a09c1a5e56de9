package process

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// followInterval is how often a follow reader at the end of output.log
// looks for more. Polling keeps this free of inotify and its limits; the
// cost is at most this much delay per line.
const followInterval = 50 * time.Millisecond

var errReaderClosed = errors.New("process runtime: log reader closed")

// Logs implements runtime.Runtime, reading output.log. Without follow the
// reader ends at the current end of the file. With follow it keeps
// returning output as the agent writes it and returns io.EOF once the
// process it found running has exited and the file is drained; a created
// or exited agent's reader ends at the end of the file. It fails with ctx's
// error when ctx ends.
func (r *Runtime) Logs(ctx context.Context, agentID string, follow bool) (io.ReadCloser, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	rec, err := r.load(agentID)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(r.path(agentID, logFile))
	if errors.Is(err, os.ErrNotExist) {
		// Never started, so there is no output and nothing to follow.
		return io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return nil, err
	}
	if !follow {
		return f, nil
	}
	fl := &follower{f: f, ctx: ctx, closed: make(chan struct{})}
	fl.draining = func() bool { alive, _ := probe(rec.Proc); return !alive }
	return fl, nil
}

// follower tails output.log while the agent lives. The file is kept open,
// so output is readable to the end even if the agent is deleted meanwhile.
type follower struct {
	f   *os.File
	ctx context.Context
	// draining reports whether the followed process is gone; once it is,
	// what is in the file is all there will be.
	draining func() bool
	done     bool // draining returned true: read to EOF, then stop

	closed    chan struct{}
	closeOnce sync.Once
}

func (fl *follower) Read(p []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-fl.closed:
			return 0, errReaderClosed
		case <-fl.ctx.Done():
			return 0, fl.ctx.Err()
		default:
		}
		n, err := fl.f.Read(p)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if fl.done {
			return 0, io.EOF
		}
		// Check for the exit only after reading to EOF, then read once
		// more: output written just before the exit is in the file by
		// the time the process is gone.
		if fl.draining() {
			fl.done = true
			continue
		}
		if timer == nil {
			timer = time.NewTimer(followInterval)
		} else {
			timer.Reset(followInterval)
		}
		select {
		case <-timer.C:
		case <-fl.ctx.Done():
			return 0, fl.ctx.Err()
		case <-fl.closed:
			return 0, errReaderClosed
		}
	}
}

// Close ends the reader; a Read blocked in it returns at once.
func (fl *follower) Close() error {
	var err error
	fl.closeOnce.Do(func() {
		close(fl.closed)
		err = fl.f.Close()
	})
	return err
}

// LogsTail is Logs starting at the last tail lines of output.log (the
// whole log for tail <= 0); the broker uses it for `scion logs --tail`.
func (r *Runtime) LogsTail(ctx context.Context, agentID string, follow bool, tail int) (io.ReadCloser, error) {
	rc, err := r.Logs(ctx, agentID, follow)
	if err != nil || tail <= 0 {
		return rc, err
	}
	f, ok := rc.(*os.File)
	if fl, isFollower := rc.(*follower); isFollower {
		f, ok = fl.f, true
	}
	if !ok {
		return rc, nil // no output yet
	}
	fi, err := f.Stat()
	if err == nil {
		var off int64
		if off, err = tailOffset(f, fi.Size(), tail); err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
	}
	if err != nil {
		rc.Close()
		return nil, err
	}
	return rc, nil
}

// tailOffset returns the offset in a file of size size where its last n
// lines start, 0 if it has no more than n. A final newline ends the last
// line rather than starting an empty one.
func tailOffset(f io.ReaderAt, size int64, n int) (int64, error) {
	buf := make([]byte, 32<<10)
	seen := 0
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && err != io.EOF {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' || start+int64(i) == size-1 {
				continue
			}
			if seen++; seen == n {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
