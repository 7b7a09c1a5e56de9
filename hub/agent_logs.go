package hub

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/channel"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/wire"
)

// handleAgentLogs streams an agent's output from its broker as text/plain,
// flushing each chunk so `scion logs -f` sees lines as they happen.
func (s *Server) handleAgentLogs(w http.ResponseWriter, r *http.Request, c *Caller) {
	ctx := r.Context()
	a, err := s.loadAgent(ctx, c, r, authz.AgentRead)
	if err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	if err := s.checkReach(ctx, a); err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	req := wire.LogsRequest{AgentID: a.ID, Follow: r.URL.Query().Get("follow") == "true"}
	if t := r.URL.Query().Get("tail"); t != "" {
		if req.Tail, err = strconv.Atoi(t); err != nil || req.Tail < 0 {
			httpapi.WriteError(s.log, w, r, api.BadRequest("tail must be a non-negative integer"))
			return
		}
	}
	sess, err := s.disp.Live(ctx, a.BrokerID)
	if err != nil {
		httpapi.WriteError(s.log, w, r, s.orBrokerMissing(ctx, a, err))
		return
	}
	st, err := sess.Conn.Stream(ctx, wire.MethodAgentLogs, req)
	if err != nil {
		httpapi.WriteError(s.log, w, r, channel.Err(ctx, sess, err))
		return
	}
	defer st.Close()
	// Read the first chunk before committing to a 200, so an error from
	// the broker (unknown agent, say) still gets its proper status.
	var chunk wire.LogChunk
	err = st.Recv(&chunk)
	if err != nil && !errors.Is(err, io.EOF) {
		httpapi.WriteError(s.log, w, r, channel.Err(ctx, sess, err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for err == nil {
		if _, werr := io.WriteString(w, chunk.Data); werr != nil {
			return
		}
		_ = rc.Flush()
		err = st.Recv(&chunk)
	}
	if !errors.Is(err, io.EOF) {
		s.log.Warn("log stream ended early", "agent_id", a.ID, "err", err)
	}
}
