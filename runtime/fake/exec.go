package fake

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/scion-go/scion/runtime"
)

var (
	_ runtime.Execer   = (*Runtime)(nil)
	_ runtime.Attacher = (*Runtime)(nil)
)

// Exec implements runtime.Execer with a tiny command set, enough for logic
// tests: `echo ARGS...` prints its arguments, `cat` copies stdin to
// stdout, `env NAME` prints a variable of the agent's environment or the
// request's, `fail TEXT` prints TEXT to stderr and exits 1, `exit N` exits
// with N. Anything else exits 127 with "command not found" on stderr.
func (r *Runtime) Exec(ctx context.Context, agentID string, req runtime.ExecRequest) (int, error) {
	if err := r.enter(ctx, "Exec"); err != nil {
		return 0, err
	}
	r.eng.mu.Lock()
	c, err := r.eng.get(agentID)
	var env map[string]string
	if err == nil {
		if c.status.State != runtime.StateRunning {
			err = fmt.Errorf("fake: agent %s is not running", agentID)
		}
		env = c.spec.Env
	}
	r.eng.mu.Unlock()
	if err != nil {
		return 0, err
	}
	out, errOut := orDiscard(req.Stdout), orDiscard(req.Stderr)
	if req.TTY {
		errOut = out
	}
	if len(req.Cmd) == 0 {
		return 0, fmt.Errorf("fake: empty command")
	}
	args := req.Cmd[1:]
	switch req.Cmd[0] {
	case "echo":
		_, err = fmt.Fprintln(out, strings.Join(args, " "))
		return 0, err
	case "cat":
		if req.Stdin != nil {
			_, err = io.Copy(out, req.Stdin)
		}
		return 0, err
	case "env":
		if len(args) == 1 {
			v, ok := req.Env[args[0]]
			if !ok {
				v = env[args[0]]
			}
			_, err = fmt.Fprintln(out, v)
		}
		return 0, err
	case "fail":
		_, err = fmt.Fprintln(errOut, strings.Join(args, " "))
		return 1, err
	case "exit":
		if len(args) == 1 {
			if n, perr := strconv.Atoi(args[0]); perr == nil {
				return n, nil
			}
		}
		return 2, nil
	}
	_, err = fmt.Fprintf(errOut, "%s: command not found\n", req.Cmd[0])
	return 127, err
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Attach implements runtime.Attacher: the fake agent echoes every line it
// reads on stdin to its output (and to its log), like `cat`. Reads end
// with io.EOF when the agent stops.
func (r *Runtime) Attach(ctx context.Context, agentID string) (runtime.Attachment, error) {
	if err := r.enter(ctx, "Attach"); err != nil {
		return nil, err
	}
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	c, err := r.eng.get(agentID)
	if err != nil {
		return nil, err
	}
	if c.status.State != runtime.StateRunning {
		return nil, fmt.Errorf("fake: agent %s is not running", agentID)
	}
	pr, pw := io.Pipe()
	a := &attachment{r: r, agentID: agentID, pr: pr, pw: pw}
	go func() {
		select {
		case <-ctx.Done():
		case <-r.waitStopped(agentID):
		}
		_ = pw.Close()
	}()
	return a, nil
}

// waitStopped returns a channel closed once the agent is no longer live.
func (r *Runtime) waitStopped(agentID string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			r.eng.mu.Lock()
			c, err := r.eng.get(agentID)
			if err != nil || c.deleted || !c.live() {
				r.eng.mu.Unlock()
				return
			}
			if c.changed == nil {
				c.changed = make(chan struct{})
			}
			ch := c.changed
			r.eng.mu.Unlock()
			<-ch
		}
	}()
	return done
}

type attachment struct {
	r       *Runtime
	agentID string
	pr      *io.PipeReader
	pw      *io.PipeWriter
	mu      sync.Mutex
}

func (a *attachment) Read(p []byte) (int, error) { return a.pr.Read(p) }

func (a *attachment) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_ = a.r.WriteLog(a.agentID, string(p))
	return a.pw.Write(p)
}

func (a *attachment) CloseWrite() error { return nil }

// Resize records the size, for TermSize.
func (a *attachment) Resize(ctx context.Context, size runtime.TermSize) error {
	a.r.eng.mu.Lock()
	defer a.r.eng.mu.Unlock()
	if c, err := a.r.eng.get(a.agentID); err == nil {
		c.size = size
	}
	return nil
}

// TermSize is the terminal size an attachment last set for agentID.
func (r *Runtime) TermSize(agentID string) runtime.TermSize {
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	if c, err := r.eng.get(agentID); err == nil {
		return c.size
	}
	return runtime.TermSize{}
}
func (a *attachment) TTY() bool { return false }
func (a *attachment) Close() error {
	_ = a.pw.Close()
	return a.pr.Close()
}
