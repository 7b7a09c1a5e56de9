package docker

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/scion-go/scion/runtime"
)

// Exec implements runtime.Execer with the engine's exec API. The command
// runs as Options.User with the container's environment plus req.Env.
// The engine cannot kill an exec: when ctx ends, Exec stops copying and
// returns, and the command runs on until it ends by itself (or with the
// container).
func (r *Runtime) Exec(ctx context.Context, agentID string, req runtime.ExecRequest) (int, error) {
	if len(req.Cmd) == 0 {
		return -1, fmt.Errorf("docker runtime: Exec %s: empty command", agentID)
	}
	var execID string
	err := r.withContainer(ctx, agentID, func(ref containerRef) error {
		resp, err := r.cli.ContainerExecCreate(ctx, ref.id, container.ExecOptions{
			User:         r.opts.User,
			Tty:          req.TTY,
			AttachStdin:  req.Stdin != nil,
			AttachStdout: true,
			AttachStderr: true,
			Env:          envList(req.Env),
			WorkingDir:   req.WorkDir,
			Cmd:          slices.Clone(req.Cmd),
		})
		if cerrdefs.IsConflict(err) {
			return fmt.Errorf("%w: %v", errNotRunning, err)
		}
		execID = resp.ID
		return err
	})
	if err != nil {
		return -1, wrapErr("Exec", agentID, err)
	}
	hj, err := r.cli.ContainerExecAttach(ctx, execID, container.ExecAttachOptions{Tty: req.TTY})
	if err != nil {
		return -1, wrapErr("Exec", agentID, err)
	}
	defer hj.Close()
	// The hijacked connection ignores ctx once established.
	stop := context.AfterFunc(ctx, hj.Close)
	defer stop()

	if req.Resize != nil && req.TTY {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case size, ok := <-req.Resize:
					if !ok {
						return
					}
					r.cli.ContainerExecResize(ctx, execID, container.ResizeOptions{Height: uint(size.Rows), Width: uint(size.Cols)})
				case <-done:
					return
				}
			}
		}()
	}
	if req.Stdin != nil {
		go func() {
			io.Copy(hj.Conn, req.Stdin)
			// End of input, while the output keeps flowing.
			hj.CloseWrite()
		}()
	}
	stdout, stderr := orDiscard(req.Stdout), orDiscard(req.Stderr)
	if req.TTY {
		_, err = io.Copy(stdout, hj.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, hj.Reader)
	}
	if ctx.Err() != nil {
		return -1, fmt.Errorf("docker runtime: Exec %s: %w", agentID, ctx.Err())
	}
	if err != nil {
		return -1, wrapErr("Exec", agentID, err)
	}
	code, err := r.execExitCode(ctx, execID)
	return code, wrapErr("Exec", agentID, err)
}

// execExitCode waits for the engine to record the exec's exit: the output
// stream can end a moment before the engine marks the exec finished.
func (r *Runtime) execExitCode(ctx context.Context, execID string) (int, error) {
	delay := time.Millisecond
	for {
		ins, err := r.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return -1, err
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Attach implements runtime.Attacher with the engine's attach API, on the
// container's stdin, stdout and stderr. Output starts at the moment of
// attaching (Logs has what came before). The engine's detach key sequence
// (ctrl-p ctrl-q by default) is not forwarded to a terminal agent.
func (r *Runtime) Attach(ctx context.Context, agentID string) (runtime.Attachment, error) {
	var a *attachment
	err := r.withContainer(ctx, agentID, func(ref containerRef) error {
		c, err := r.cli.ContainerInspect(ctx, ref.id)
		if err != nil {
			return err
		}
		if c.State == nil || !c.State.Running || c.State.Paused {
			return fmt.Errorf("%w (it is %s)", errNotRunning, r.status(ctx, c).State)
		}
		hj, err := r.cli.ContainerAttach(ctx, ref.id, container.AttachOptions{
			Stream: true, Stdin: true, Stdout: true, Stderr: true,
		})
		if err != nil {
			return err
		}
		tty := c.Config != nil && c.Config.Tty
		a = &attachment{r: r, id: ref.id, hj: hj, tty: tty}
		a.out = newStreamReader(ctx, io.NopCloser(hj.Reader), tty)
		stop := context.AfterFunc(ctx, func() { a.Close() })
		a.mu.Lock()
		a.stop = stop
		a.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, wrapErr("Attach", agentID, err)
	}
	return a, nil
}

// attachment is a runtime.Attachment over a hijacked engine connection.
type attachment struct {
	r   *Runtime
	id  string
	hj  types.HijackedResponse
	tty bool
	out *streamReader

	closeOnce sync.Once
	mu        sync.Mutex
	stop      func() bool // unregisters the ctx watch; set just after creation
}

func (a *attachment) Read(p []byte) (int, error) { return a.out.Read(p) }

func (a *attachment) Write(p []byte) (int, error) { return a.hj.Conn.Write(p) }

// CloseWrite ends this attachment's input without half-closing the
// engine's attach connection: the engine answers a half-close by closing
// the attachment's output at once, which would lose the agent's answer to
// what was just sent. The agent's stdin outlives attachments anyway
// (OpenStdin without StdinOnce), so it would not see end of file either.
func (a *attachment) CloseWrite() error { return nil }

func (a *attachment) TTY() bool { return a.tty }

func (a *attachment) Resize(ctx context.Context, size runtime.TermSize) error {
	if !a.tty {
		return nil
	}
	err := a.r.cli.ContainerResize(ctx, a.id, container.ResizeOptions{Height: uint(size.Rows), Width: uint(size.Cols)})
	if err != nil {
		return fmt.Errorf("docker runtime: resize: %w", err)
	}
	return nil
}

// Close detaches: closing the connection is all the engine needs.
func (a *attachment) Close() error {
	a.closeOnce.Do(func() {
		a.hj.Close()
		a.out.Close()
	})
	a.mu.Lock()
	if a.stop != nil {
		a.stop()
	}
	a.mu.Unlock()
	return nil
}
