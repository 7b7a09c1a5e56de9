package broker

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// execChunk bounds one output item of exec and attach streams.
const execChunk = 32 << 10

// streamWriter turns writes into stream items (split to execChunk).
type streamWriter struct {
	mu   *sync.Mutex // exec's stdout and stderr share one send
	send func(any) error
	wrap func([]byte) any
}

func (w streamWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), execChunk)]
		w.mu.Lock()
		err := w.send(w.wrap(append([]byte(nil), c...)))
		w.mu.Unlock()
		if err != nil {
			return n, err
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
}

func unsupported(what string, rt runtime.Runtime) error {
	return api.Errorf(api.CodeUnsupportedOperation, "%s is not supported by the %s runtime", what, rt.Name())
}

// handleExec runs a command in an agent and streams its output, then its
// exit code. It takes no agent lock: an exec may last long and must not
// block a stop.
func (b *Broker) handleExec(ctx context.Context, req *wire.Request, send func(any) error) error {
	var er wire.ExecRequest
	if err := req.Decode(&er); err != nil {
		return api.BadRequest("%s: %v", req.Method, err)
	}
	if err := workspace.ValidID("agent ID", er.AgentID); err != nil {
		return err
	}
	if len(er.Command) == 0 {
		return api.BadRequest("exec needs a command")
	}
	ex, ok := b.rt.(runtime.Execer)
	if !ok {
		return unsupported("exec", b.rt)
	}
	var mu sync.Mutex
	out := streamWriter{mu: &mu, send: send, wrap: func(p []byte) any { return wire.ExecOutput{Stream: "stdout", Data: p} }}
	errw := streamWriter{mu: &mu, send: send, wrap: func(p []byte) any { return wire.ExecOutput{Stream: "stderr", Data: p} }}
	r := runtime.ExecRequest{Cmd: er.Command, Env: er.Env, TTY: er.TTY, Stdout: out, Stderr: errw}
	if er.Stdin != nil {
		r.Stdin = bytesReader(er.Stdin)
	}
	code, err := ex.Exec(ctx, er.AgentID, r)
	if err != nil {
		return b.opError(req.Method, er.AgentID, err)
	}
	return send(wire.ExecOutput{Stream: "exit", ExitCode: &code})
}

func bytesReader(p []byte) io.Reader { return &sliceReader{p: p} }

type sliceReader struct{ p []byte }

func (r *sliceReader) Read(b []byte) (int, error) {
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.p)
	r.p = r.p[n:]
	return n, nil
}

// attachSessions maps attach session IDs to live attachments, so the
// input calls that follow an attach stream find it.
type attachSessions struct {
	mu sync.Mutex
	m  map[string]runtime.Attachment
}

func (s *attachSessions) put(id string, a runtime.Attachment) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]runtime.Attachment{}
	}
	if _, dup := s.m[id]; dup {
		return false
	}
	s.m[id] = a
	return true
}

func (s *attachSessions) get(id string) runtime.Attachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

func (s *attachSessions) drop(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// handleAttach connects to an agent's main process and streams its output
// until the agent exits or the Hub cancels (detach). Detaching never stops
// the agent.
func (b *Broker) handleAttach(ctx context.Context, req *wire.Request, send func(any) error) error {
	var ar wire.AttachRequest
	if err := req.Decode(&ar); err != nil {
		return api.BadRequest("%s: %v", req.Method, err)
	}
	if err := workspace.ValidID("agent ID", ar.AgentID); err != nil {
		return err
	}
	if ar.SessionID == "" || len(ar.SessionID) > 128 {
		return api.BadRequest("attach needs a session ID")
	}
	at, ok := b.rt.(runtime.Attacher)
	if !ok {
		return unsupported("attach", b.rt)
	}
	a, err := at.Attach(ctx, ar.AgentID)
	if err != nil {
		return b.opError(req.Method, ar.AgentID, err)
	}
	defer a.Close()
	if !b.attach.put(ar.SessionID, a) {
		return api.Conflict(api.CodeConflict, "attach session %s exists", ar.SessionID)
	}
	defer b.attach.drop(ar.SessionID)
	// An empty first item confirms the attachment, so the Hub can answer
	// its client's upgrade only once the agent is really attached.
	if err := send(wire.AttachOutput{}); err != nil {
		return err
	}
	var mu sync.Mutex
	w := streamWriter{mu: &mu, send: send, wrap: func(p []byte) any { return wire.AttachOutput{Data: p} }}
	buf := make([]byte, execChunk)
	_, err = io.CopyBuffer(w, struct{ io.Reader }{a}, buf)
	if err != nil && !errors.Is(err, io.ErrClosedPipe) && ctx.Err() == nil {
		return b.opError(req.Method, ar.AgentID, err)
	}
	return nil
}

// handleAttachInput feeds an attachment's stdin, closes it or resizes it.
func (b *Broker) handleAttachInput(ctx context.Context, req *wire.Request) (any, error) {
	var in wire.AttachInput
	if err := req.Decode(&in); err != nil {
		return nil, api.BadRequest("%s: %v", req.Method, err)
	}
	a := b.attach.get(in.SessionID)
	if a == nil {
		return nil, api.NotFound(api.CodeNotFound, "no attach session %s", in.SessionID)
	}
	if len(in.Data) > 0 {
		if _, err := a.Write(in.Data); err != nil {
			return nil, api.Errorf(api.CodeAttachClosed, "the attachment is closed: %v", err)
		}
	}
	if in.Rows > 0 && in.Cols > 0 {
		if err := a.Resize(ctx, runtime.TermSize{Rows: in.Rows, Cols: in.Cols}); err != nil {
			return nil, err
		}
	}
	if in.CloseWrite {
		if err := a.CloseWrite(); err != nil {
			return nil, err
		}
	}
	return struct{}{}, nil
}
