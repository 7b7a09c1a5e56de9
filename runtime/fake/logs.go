package fake

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
)

// errReaderClosed is returned by Read on a follow reader after Close.
var errReaderClosed = errors.New("fake: log reader closed")

// Logs implements runtime.Runtime. Without follow it returns a snapshot of
// the log. With follow the reader returns new output as it is written and
// io.EOF once the container is no longer running or paused (or has been
// deleted) and everything has been read; it fails with ctx's error when
// ctx ends.
func (r *Runtime) Logs(ctx context.Context, agentID string, follow bool) (io.ReadCloser, error) {
	if err := r.enter(ctx, "Logs"); err != nil {
		return nil, err
	}
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	c, err := r.eng.get(agentID)
	if err != nil {
		return nil, err
	}
	if !follow {
		return io.NopCloser(bytes.NewReader(bytes.Clone(c.log))), nil
	}
	return &follower{eng: r.eng, c: c, ctx: ctx, closed: make(chan struct{})}, nil
}

type follower struct {
	eng       *engine
	c         *container
	ctx       context.Context
	off       int
	closed    chan struct{}
	closeOnce sync.Once
}

func (f *follower) Read(p []byte) (int, error) {
	for {
		select {
		case <-f.closed:
			return 0, errReaderClosed
		case <-f.ctx.Done():
			return 0, f.ctx.Err()
		default:
		}
		f.eng.mu.Lock()
		if f.off < len(f.c.log) {
			n := copy(p, f.c.log[f.off:])
			f.off += n
			f.eng.mu.Unlock()
			return n, nil
		}
		if f.c.deleted || !f.c.live() {
			f.eng.mu.Unlock()
			return 0, io.EOF
		}
		if f.c.changed == nil {
			f.c.changed = make(chan struct{})
		}
		changed := f.c.changed
		f.eng.mu.Unlock()
		select {
		case <-changed:
		case <-f.ctx.Done():
			return 0, f.ctx.Err()
		case <-f.closed:
			return 0, errReaderClosed
		}
	}
}

func (f *follower) Close() error {
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}
