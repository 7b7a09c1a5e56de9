package docker

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// Logs implements runtime.Runtime with the engine's log of the container's
// stdout and stderr, merged. It needs a log driver the engine can read
// back (json-file, local or journald: the defaults). Following ends when
// the container stops or is deleted (io.EOF), when ctx ends (ctx's error)
// or when the reader is closed; following a container that is not running
// returns what it wrote and ends.
func (r *Runtime) Logs(ctx context.Context, agentID string, follow bool) (io.ReadCloser, error) {
	return r.LogsTail(ctx, agentID, follow, 0)
}

// LogsTail is Logs starting at the container's last tail lines (all of
// them for tail <= 0), cut by the engine; the broker uses it for
// `scion logs --tail`.
func (r *Runtime) LogsTail(ctx context.Context, agentID string, follow bool, tail int) (io.ReadCloser, error) {
	tailOpt := "all"
	if tail > 0 {
		tailOpt = strconv.Itoa(tail)
	}
	var rc io.ReadCloser
	err := r.withContainer(ctx, agentID, func(ref containerRef) error {
		body, err := r.cli.ContainerLogs(ctx, ref.id, container.LogsOptions{
			ShowStdout: true, ShowStderr: true, Follow: follow, Tail: tailOpt,
		})
		if err != nil {
			return err
		}
		rc = newStreamReader(ctx, body, ref.tty)
		return nil
	})
	return rc, wrapErr("Logs", agentID, err)
}

// streamReader turns an engine stream (logs, attach) into a plain reader
// of the merged output. Without a terminal the engine multiplexes stdout
// and stderr in framed chunks (stdcopy); a goroutine unframes them into a
// pipe. With a terminal the stream is raw already.
type streamReader struct {
	r     io.Reader
	body  io.Closer
	pr    *io.PipeReader
	close sync.Once
}

func newStreamReader(ctx context.Context, body io.ReadCloser, tty bool) *streamReader {
	s := &streamReader{body: body}
	if tty {
		s.r = body
		return s
	}
	pr, pw := io.Pipe()
	s.r, s.pr = pr, pr
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, body)
		// The engine's stream breaks off with a transport error when ctx
		// is cancelled; the caller wants to know it was the context.
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		pw.CloseWithError(err) // nil: io.EOF
		body.Close()
	}()
	return s
}

func (s *streamReader) Read(p []byte) (int, error) { return s.r.Read(p) }

// Close ends the stream; a Read blocked in it returns at once.
func (s *streamReader) Close() error {
	s.close.Do(func() {
		if s.pr != nil {
			s.pr.Close()
		}
		s.body.Close()
	})
	return nil
}

// Bounds of the output quoted in crash messages.
const (
	tailLines = 10
	tailBytes = 2048
)

// logTail returns the last lines the container wrote, for error messages;
// empty if there are none or they cannot be read.
func (r *Runtime) logTail(ctx context.Context, id string, tty bool) string {
	body, err := r.cli.ContainerLogs(ctx, id, container.LogsOptions{
		ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(tailLines),
	})
	if err != nil {
		return ""
	}
	defer body.Close()
	var buf bytes.Buffer
	if tty {
		io.Copy(&buf, io.LimitReader(body, 64<<10))
	} else {
		w := &limitWriter{w: &buf, n: 64 << 10}
		stdcopy.StdCopy(w, w, body)
	}
	out := strings.TrimRight(strings.ReplaceAll(buf.String(), "\r\n", "\n"), "\n")
	lines := strings.Split(out, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	out = strings.Join(lines, "\n")
	if len(out) > tailBytes {
		out = "..." + out[len(out)-tailBytes:]
	}
	return out
}

// limitWriter keeps the first n bytes written and drops the rest, without
// failing the writer (which would stop stdcopy early).
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
