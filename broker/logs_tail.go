package broker

import (
	"bytes"
	"context"
	"io"
)

// maxLogTail bounds the lines a logs request may ask to start with; the
// Hub already refuses negative values. The broker keeps at most this many
// lines in memory when it has to cut the tail itself.
const maxLogTail = 100_000

// tailLogger is implemented by runtimes that can start a log at its last
// tail lines themselves (the process runtime seeks in its file, Docker asks
// the engine), following or not. tail 0 means the whole log.
type tailLogger interface {
	LogsTail(ctx context.Context, agentID string, follow bool, tail int) (io.ReadCloser, error)
}

// openLogs opens an agent's log starting at its last tail lines: through
// the runtime where it can, else by cutting a finished (not followed) log
// here. A followed log of a runtime that cannot start at a tail is sent
// whole: the broker cannot tell where its history ends.
func (b *Broker) openLogs(ctx context.Context, agentID string, follow bool, tail int) (io.ReadCloser, error) {
	tail = min(tail, maxLogTail)
	if tail <= 0 {
		return b.rt.Logs(ctx, agentID, follow)
	}
	if tl, ok := b.rt.(tailLogger); ok {
		return tl.LogsTail(ctx, agentID, follow, tail)
	}
	rc, err := b.rt.Logs(ctx, agentID, follow)
	if err != nil || follow {
		return rc, err
	}
	defer rc.Close()
	data, err := lastLines(rc, tail)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// lastLines reads r to its end and returns its last n lines (a final line
// without a newline counts as a line), keeping no more than n+1 lines in
// memory at a time.
func lastLines(r io.Reader, n int) ([]byte, error) {
	var lines [][]byte // ring of the newest complete lines
	var next int       // where the next line goes once the ring is full
	var partial []byte // the line being read
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		p := buf[:k]
		for len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				partial = append(partial, p...)
				break
			}
			line := append(partial, p[:i+1]...)
			partial = nil
			if len(lines) < n {
				lines = append(lines, line)
			} else {
				lines[next] = line
				next = (next + 1) % n
			}
			p = p[i+1:]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	ordered := append(append([][]byte(nil), lines[next:]...), lines[:next]...)
	if len(partial) > 0 {
		ordered = append(ordered, partial)
		if len(ordered) > n {
			ordered = ordered[1:]
		}
	}
	return bytes.Join(ordered, nil), nil
}
