package runtime

import (
	"context"
	"io"
)

// Execer is implemented by runtimes that can run a command inside a running
// agent's container (`scion exec`). It is optional: callers type-assert a
// Runtime to it and report "not supported" otherwise.
//
// The request is plain streams (an io.Reader in, io.Writers out, a channel
// of terminal sizes) so that a broker can wire it to the multiplexed
// streams of the control channel without buffering whole outputs.
type Execer interface {
	// Exec runs req.Cmd in the agent's container and returns the command's
	// exit code once its output has been copied in full. An agent that is
	// not running is an error; an unknown agent is ErrNotFound. Cancelling
	// ctx stops the copying and returns ctx's error; whether the command
	// itself is stopped depends on the runtime (the Docker Engine, for
	// one, has no way to kill an exec), so callers should not rely on it.
	Exec(ctx context.Context, agentID string, req ExecRequest) (exitCode int, err error)
}

// ExecRequest describes one command run by Execer.Exec.
type ExecRequest struct {
	// Cmd is the command and its arguments; it is not run through a shell.
	Cmd []string
	// Env is added to the agent's environment for this command only.
	Env map[string]string
	// WorkDir is the command's working directory; empty means the
	// container's own.
	WorkDir string
	// TTY allocates a pseudo-terminal. Its output (stdout and stderr
	// merged, as a terminal does) all goes to Stdout.
	TTY bool
	// Stdin, if not nil, is copied to the command's standard input; the
	// command sees end of file when Stdin does. With a nil Stdin the
	// command gets no input at all. Exec never closes Stdin and may return
	// before it is drained (the command ended without reading it all).
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; nil discards it.
	Stdout io.Writer
	Stderr io.Writer
	// Resize, if not nil, delivers terminal size changes (TTY only) until
	// it is closed or the command ends.
	Resize <-chan TermSize
}

// TermSize is a terminal's size in character cells.
type TermSize struct {
	Rows uint16
	Cols uint16
}

// Attacher is implemented by runtimes that can connect to the main
// process of a running agent, as `scion attach` does: what the caller
// writes goes to the agent's standard input and what the agent prints comes
// back. It is optional, like Execer.
type Attacher interface {
	// Attach connects to the agent. ctx bounds the whole attachment:
	// cancelling it detaches, as Close does. Detaching never stops the
	// agent. An agent that is not running is an error; an unknown agent
	// is ErrNotFound.
	Attach(ctx context.Context, agentID string) (Attachment, error)
}

// Attachment is a live connection to an agent's main process.
type Attachment interface {
	// Read returns the agent's output (stdout and stderr merged) from the
	// moment of attaching; it returns io.EOF when the agent exits.
	io.Reader
	// Write sends bytes to the agent's standard input.
	io.Writer
	// CloseWrite tells the runtime that no more input will come from this
	// attachment. Whether the agent then sees end of file depends on the
	// runtime: a container whose stdin outlives attachments (Docker's
	// default for agents) does not.
	CloseWrite() error
	// Resize changes the agent's terminal size; it is a no-op for an agent
	// without a terminal.
	Resize(ctx context.Context, size TermSize) error
	// TTY reports whether the agent runs with a terminal, i.e. whether the
	// byte stream is a terminal's (with escape sequences and \r\n).
	TTY() bool
	// Close detaches. The agent keeps running.
	Close() error
}
