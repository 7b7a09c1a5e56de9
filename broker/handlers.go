package broker

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// register installs the Hub-to-broker methods on a new channel.
func (b *Broker) register(c *wire.Conn) {
	c.Handle(wire.MethodAgentCreate, b.pinned(b.keyed(c, onAgent(b, b.createAgent))))
	c.Handle(wire.MethodAgentStart, b.pinned(b.keyed(c, onAgent(b, b.startAgent))))
	c.Handle(wire.MethodAgentStop, b.pinned(b.keyed(c, onAgent(b, b.stopAgent))))
	c.Handle(wire.MethodAgentRestart, b.pinned(b.keyed(c, onAgent(b, b.restartAgent))))
	c.Handle(wire.MethodAgentSuspend, b.pinned(b.keyed(c, onAgent(b, b.suspendAgent))))
	c.Handle(wire.MethodAgentResume, b.pinned(b.keyed(c, onAgent(b, b.resumeAgent))))
	c.Handle(wire.MethodAgentDelete, b.pinned(b.keyed(c, onAgent(b, b.deleteAgent))))
	c.Handle(wire.MethodAgentCleanup, b.keyed(c, onAgent(b, b.cleanupMoved)))
	c.Handle(wire.MethodAgentInspect, b.pinned(onAgent(b, b.inspectAgent)))
	c.HandleStream(wire.MethodAgentLogs, b.handleLogs)
	c.HandleStream(wire.MethodAgentExec, b.handleExec)
	c.HandleStream(wire.MethodAgentAttach, b.handleAttach)
	c.Handle(wire.MethodAgentAttachInput, b.handleAttachInput)
	c.Handle(wire.MethodInventory, func(ctx context.Context, _ *wire.Request) (any, error) {
		return b.inventory(ctx)
	})
	c.Handle(wire.MethodProjectCleanup, b.cleanupProject)
	if b.jobs != nil {
		c.Handle(wire.MethodJobRun, b.keyed(c, b.handleJobRun))
		c.Handle(wire.MethodJobCancel, b.keyed(c, b.handleJobCancel))
	}
	c.Handle(wire.MethodEcho, func(_ context.Context, req *wire.Request) (any, error) {
		return req.Body, nil
	})
}

// keyed makes a handler idempotent for requests that carry a key. Keys are
// scoped by method so that a key reused by mistake for another command
// never answers it with the wrong result.
//
// A keyed command runs to its end on the broker (see detach), not only
// as long as its caller waits: its retry with the key is then answered
// with its outcome, waiting for it if need be, rather than finding half
// of it undone while the engine still finishes the rest.
func (b *Broker) keyed(c *wire.Conn, h wire.Handler) wire.Handler {
	return func(ctx context.Context, req *wire.Request) (any, error) {
		if req.Key == "" {
			return h(ctx, req)
		}
		ctx = context.WithValue(ctx, keyedCtx{}, true)
		v, err := b.dedup.Do(ctx, req.Method+"\x00"+req.Key, func() (any, error) {
			dctx, cancel := b.detach(ctx)
			defer cancel()
			return h(dctx, req)
		})
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = workspace.ContextError(err) // a duplicate gave up waiting on the first
		}
		if b.cfg.DropReply != nil && b.cfg.DropReply(req.Method, req.Key) {
			// Fault injection: the effect happened and is recorded, the
			// acknowledgement is lost with the connection.
			b.log.Warn("fault injection: dropping the reply and the channel", "method", req.Method, "key", req.Key)
			_ = c.Close("fault injection: reply dropped")
			return nil, api.Errorf(api.CodeBrokerUnavailable, "reply dropped")
		}
		return v, err
	}
}

// keyedBudget is how long a keyed command may run on the broker at least,
// whenever its caller stops waiting.
const keyedBudget = 5 * time.Minute

// detach is the context a keyed command runs under: ctx's values, not its
// end. The Hub's deadline passing, its cancel, or the channel dropping no
// longer cuts the command short: cut, a create was undone while the
// engine, which goes on with a request whose client went away, still
// made its container, and the Hub's retry then met that container and
// failed with "already exists". The command ends when the broker stops
// (Run's context) or after keyedBudget (or ctx's own deadline, if later).
func (b *Broker) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := keyedBudget
	if dl, ok := ctx.Deadline(); ok {
		budget = max(budget, time.Until(dl))
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	if b.runCtx == nil {
		return dctx, cancel
	}
	stop := context.AfterFunc(b.runCtx, cancel)
	return dctx, func() { stop(); cancel() }
}

// keyedCtx marks the context of a keyed command: one the Hub may retry
// after losing its answer, so that a repeat may be the same command again.
type keyedCtx struct{}

func isKeyed(ctx context.Context) bool { v, _ := ctx.Value(keyedCtx{}).(bool); return v }

// agentBody is a command body that names one agent.
type agentBody interface {
	wire.AgentSpec | wire.AgentRef
}

// onAgent adapts an operation on one agent to a handler: it decodes the
// body, holds the agent's lock while op runs (commands for one agent never
// interleave) and maps runtime errors to API errors.
func onAgent[T agentBody](b *Broker, op func(context.Context, T) (runtime.Status, error)) wire.Handler {
	return func(ctx context.Context, req *wire.Request) (any, error) {
		var body T
		if err := req.Decode(&body); err != nil {
			return nil, api.BadRequest("%s: %v", req.Method, err)
		}
		var agentID string
		switch v := any(body).(type) {
		case wire.AgentSpec:
			agentID = v.AgentID
		case wire.AgentRef:
			agentID = v.AgentID
		}
		if err := workspace.ValidID("agent ID", agentID); err != nil {
			return nil, err
		}
		unlock, err := b.locks.lock(ctx, agentID)
		if err != nil {
			return nil, err
		}
		defer unlock()
		st, err := op(ctx, body)
		b.syncPorts(ctx, agentID, st, err)
		if err != nil {
			return nil, b.opError(req.Method, agentID, err)
		}
		w := agentStatus(st)
		if startsAgent[req.Method] {
			w.WorkspacePlacement = b.placement(agentID)
		}
		return w, nil
	}
}

// startsAgent are the commands after which the broker tells the Hub where
// the agent's workspace is: it records that at every start (a move reads
// it to know whether the workspace is on the export).
var startsAgent = map[string]bool{wire.MethodAgentCreate: true, wire.MethodAgentStart: true,
	wire.MethodAgentRestart: true, wire.MethodAgentResume: true}

// placement is where the agent's workspace is: as noted when this process
// made it (notePlacement), else from its record ("" when the broker's
// Workspaces keep none). The note spares every create a directory scan
// and a file read on the hot path.
func (b *Broker) placement(agentID string) string {
	if p, ok := b.placements.Load(agentID); ok {
		return p.(string)
	}
	rec, err := b.AgentWorkspace(agentID)
	if err != nil {
		return ""
	}
	b.placements.Store(agentID, rec.Placement())
	return rec.Placement()
}

// notePlacement remembers where the workspace just made at dir is.
func (b *Broker) notePlacement(agentID, dir string) {
	if r, ok := b.ws.(WorkspaceReporter); ok {
		b.placements.Store(agentID, r.PlacementOf(dir))
	}
}

// logChunkSize bounds one LogChunk's data.
const logChunkSize = 32 << 10

// handleLogs streams an agent's output. It does not take the agent's lock:
// a followed log lasts as long as the agent, and reading it must not block
// a stop.
func (b *Broker) handleLogs(ctx context.Context, req *wire.Request, send func(any) error) error {
	var lr wire.LogsRequest
	if err := req.Decode(&lr); err != nil {
		return api.BadRequest("%s: %v", req.Method, err)
	}
	if err := workspace.ValidID("agent ID", lr.AgentID); err != nil {
		return err
	}
	rc, err := b.openLogs(ctx, lr.AgentID, lr.Follow, lr.Tail)
	if err != nil {
		return b.opError(req.Method, lr.AgentID, err)
	}
	defer rc.Close()
	buf := make([]byte, logChunkSize)
	var pending int // bytes of an incomplete UTF-8 sequence kept at buf[0:]
	for {
		n, rerr := rc.Read(buf[pending:])
		n += pending
		// Data is a JSON string: hold back a rune split across reads so it
		// is not replaced by U+FFFD, unless the stream ends here.
		cut := n
		if rerr == nil {
			cut = completeUTF8(buf[:n])
		}
		if cut > 0 {
			if err := send(wire.LogChunk{Stream: "stdout", Data: string(buf[:cut])}); err != nil {
				return err
			}
		}
		pending = copy(buf, buf[cut:n])
		if errors.Is(rerr, io.EOF) {
			if lr.Follow {
				// A followed log ends when the agent does. Tell the Hub
				// the agent's state before the stream's end, so that a
				// user whose `scion logs -f` just returned lists the
				// agent as stopped rather than still running (the
				// runtime's event about it may not have arrived yet).
				b.reportStatus(ctx, lr.AgentID)
			}
			return nil
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return workspace.ContextError(ctx.Err())
			}
			return b.opError(req.Method, lr.AgentID, rerr)
		}
	}
}

// completeUTF8 returns the length of the longest prefix of p that does not
// end inside a multi-byte UTF-8 sequence (invalid bytes count as complete).
func completeUTF8(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(p[i]) {
			continue
		}
		if !utf8.FullRune(p[i:]) {
			return i
		}
		break
	}
	return len(p)
}

// inventory reads every container at once, without the agents' locks,
// so each entry is stamped with the time before the read began: a
// command that changes an agent while the read is under way answers
// with a later stamp, and its answer, not the read's older view of the
// agent, is what the Hub keeps. (Stamped after the read, the view could
// look newer than the command's answer, and undo it at the Hub.)
func (b *Broker) inventory(ctx context.Context) (wire.Inventory, error) {
	before := stamp()
	sts, err := b.rt.Inventory(ctx)
	if err != nil {
		return wire.Inventory{}, b.opError(wire.MethodInventory, "", err)
	}
	inv := wire.Inventory{Agents: make([]wire.AgentStatus, 0, len(sts))}
	for _, s := range sts {
		st := agentStatus(s)
		st.ObservedAt = before
		inv.Agents = append(inv.Agents, st)
	}
	return inv, nil
}

// lastStamp is the newest ObservedAt handed out.
var lastStamp atomic.Int64

// stamp returns a strictly increasing observation time (unix ns).
func stamp() int64 {
	for {
		now, last := time.Now().UnixNano(), lastStamp.Load()
		if now <= last {
			now = last + 1
		}
		if lastStamp.CompareAndSwap(last, now) {
			return now
		}
	}
}

// agentStatus converts a runtime status to its wire form.
func agentStatus(s runtime.Status) wire.AgentStatus {
	w := wire.AgentStatus{
		AgentID:   s.AgentID,
		RunID:     s.RunID,
		ProjectID: s.Labels[runtime.LabelProjectID],
		State:     s.State,
		ExitCode:  s.ExitCode,
		Message:   s.Message,
		Labels:    s.Labels,
		Ports:     statusPorts(s),
		// Callers hold the agent's lock, so stamps follow the real order
		// of the agent's states.
		ObservedAt: stamp(),
	}
	if !s.StartedAt.IsZero() {
		t := s.StartedAt
		w.StartedAt = &t
	}
	return w
}

// opError turns an error of an agent operation into the API error sent to
// the Hub: API errors pass as they are, a missing container is
// agent_not_found, an operation the runtime cannot do (errors.ErrUnsupported)
// unsupported_operation (501), an expired request a timeout, anything else
// a runtime_error that names the runtime, the operation and the cause.
func (b *Broker) opError(op, agentID string, err error) error {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, runtime.ErrNotFound):
		return api.NotFound(api.CodeAgentNotFound, "agent %s not found on runtime broker %s", agentID, b.cfg.BrokerID)
	case errors.Is(err, errors.ErrUnsupported): // suspend on Kubernetes, say
		return api.Errorf(api.CodeUnsupportedOperation, "%s runtime: %s: %v", b.rt.Name(), strings.TrimSpace(op+" "+agentID), err).WithDetail("runtime", b.rt.Name())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return workspace.ContextError(err)
	}
	e := api.Errorf(api.CodeRuntimeError, "%s runtime: %s: %v", b.rt.Name(), strings.TrimSpace(op+" "+agentID), err)
	return e.WithDetail("runtime", b.rt.Name())
}
