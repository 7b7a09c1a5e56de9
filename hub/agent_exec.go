package hub

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/channel"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/wire"
)

// handleAgentExec runs a command in an agent through its broker and
// streams the output as NDJSON lines (api.ExecOutput), ending with the
// exit code.
func (s *Server) handleAgentExec(w http.ResponseWriter, r *http.Request, c *Caller) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, api.MaxRequestBody)
	var req api.ExecRequest
	err := httpapi.DecodeJSON(r, &req)
	if err == nil && (len(req.Command) == 0 || len(req.Command) > 256) {
		err = api.BadRequest("exec needs a command of 1 to 256 arguments")
	}
	if err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	a, sess, err := s.agentSession(ctx, c, r)
	if err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	st, err := sess.Conn.Stream(ctx, wire.MethodAgentExec, wire.ExecRequest{AgentID: a, Command: req.Command, Env: req.Env, TTY: req.TTY, Stdin: req.Stdin})
	if err != nil {
		httpapi.WriteError(s.log, w, r, channel.Err(ctx, sess, err))
		return
	}
	defer st.Close()
	var out wire.ExecOutput
	// The first item decides the status: an error before any output (an
	// agent that is not running, say) keeps its own status.
	if err := st.Recv(&out); err != nil {
		if errors.Is(err, io.EOF) {
			err = api.Internal("exec ended without an exit code")
		}
		httpapi.WriteError(s.log, w, r, channel.Err(ctx, sess, err))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	for {
		if err := enc.Encode(api.ExecOutput{Stream: out.Stream, Data: out.Data, ExitCode: out.ExitCode}); err != nil {
			return
		}
		_ = rc.Flush()
		if out.Stream == "exit" {
			return
		}
		// A fresh item each time: decoding into the last one would keep
		// fields the next item omits (the exit item has no data, and
		// would repeat the previous chunk's).
		out = wire.ExecOutput{}
		if err := st.Recv(&out); err != nil {
			if errors.Is(err, io.EOF) {
				err = api.Internal("exec ended without an exit code")
			}
			e := api.AsError(channel.Err(ctx, sess, err))
			if pub := httpapi.PublicError(e); pub != e {
				s.log.Warn("exec stream error answered without its details", "err", e)
				e = pub
			}
			_ = enc.Encode(api.ExecOutput{Stream: "error", Error: e})
			return
		}
	}
}

// agentSession loads {agent} and the live channel of its broker.
func (s *Server) agentSession(ctx context.Context, c *Caller, r *http.Request) (string, *channel.Session, error) {
	a, err := s.loadAgent(ctx, c, r, authz.AgentLifecycle)
	if err != nil {
		return "", nil, err
	}
	if err := s.checkReach(ctx, a); err != nil {
		return "", nil, err
	}
	if a.Phase != api.PhaseRunning {
		return "", nil, api.Conflict(api.CodeInvalidPhase, "agent %q is %s, not running; start it first", a.Slug, a.Phase)
	}
	sess, err := s.disp.Live(ctx, a.BrokerID)
	if err != nil {
		return "", nil, s.orBrokerMissing(ctx, a, err)
	}
	return a.ID, sess, nil
}

// handleAgentAttach bridges a client WebSocket to an agent's main process:
// binary messages carry bytes both ways, text messages from the client are
// api.AttachControl. Closing the socket detaches; the agent keeps running.
func (s *Server) handleAgentAttach(w http.ResponseWriter, r *http.Request, c *Caller) {
	agentID, sess, err := s.agentSession(r.Context(), c, r)
	if err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	// Open the broker side first so a refusal (agent not running, runtime
	// without attach) still gets a proper HTTP error.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	sessionID := httpapi.NewID()
	st, err := sess.Conn.Stream(ctx, wire.MethodAgentAttach, wire.AttachRequest{AgentID: agentID, SessionID: sessionID})
	if err != nil {
		httpapi.WriteError(s.log, w, r, channel.Err(ctx, sess, err))
		return
	}
	defer st.Close()
	var first wire.AttachOutput // the broker's confirmation, or its refusal
	if err := st.Recv(&first); err != nil {
		if errors.Is(err, io.EOF) {
			err = api.Conflict(api.CodeConflict, "the agent exited before it could be attached")
		}
		httpapi.WriteError(s.log, w, r, channel.Err(ctx, sess, err))
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	go func() { // client -> agent
		defer cancel()
		for {
			typ, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			in := wire.AttachInput{SessionID: sessionID}
			if typ == websocket.MessageBinary {
				in.Data = data
			} else {
				var ctl api.AttachControl
				if json.Unmarshal(data, &ctl) != nil {
					continue
				}
				in.CloseWrite, in.Rows, in.Cols = ctl.CloseWrite, ctl.Rows, ctl.Cols
			}
			if err := sess.Conn.Call(ctx, wire.MethodAgentAttachInput, in, nil); err != nil {
				return
			}
		}
	}()
	for { // agent -> client
		var out wire.AttachOutput
		if err := st.Recv(&out); err != nil {
			reason := "agent exited"
			if !errors.Is(err, io.EOF) {
				reason = httpapi.ScrubAddresses(api.AsError(err).Message)
			}
			_ = ws.Close(websocket.StatusNormalClosure, truncate(reason, 120))
			return
		}
		if err := ws.Write(ctx, websocket.MessageBinary, out.Data); err != nil {
			return
		}
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
