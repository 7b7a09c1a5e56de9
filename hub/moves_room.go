package hub

import (
	"context"
	"net/http"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/moves"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// The room of moves is hub/moves; this is what it takes from the Hub
// (moves.Hub): the agent's load, the channel's liveness, a broker's limit,
// and for the saga the Hub's context, its commands and their recording.

func (s *Server) newMoves() *moves.Service {
	return moves.New(moves.Config{Store: s.store, Hub: movesHub{s}, Log: s.log, Hook: s.opts.MoveHook})
}

// movesHub is the Server as hub/moves sees it.
type movesHub struct{ s *Server }

func (h movesHub) LoadAgent(ctx context.Context, c *authz.Caller, r *http.Request, act authz.Action) (*store.Agent, error) {
	return h.s.loadAgent(ctx, c, r, act)
}

func (h movesHub) BrokerOnline(brokerID string) bool { return h.s.disp.Online(brokerID) }

func (h movesHub) BrokerLimit(ctx context.Context, b *store.Broker) (int, error) {
	return h.s.brokerLimit(ctx, b)
}

func (h movesHub) SystemContext() context.Context { return h.s.systemCtx() }

func (h movesHub) Go(f func()) {
	h.s.bg.Add(1)
	go func() {
		defer h.s.bg.Done()
		f()
	}()
}

func (h movesHub) AgentSecrets(ctx context.Context, c *authz.Caller, p *store.Project, a *store.Agent) (map[string]string, error) {
	return h.s.recordedSecrets(ctx, c, p, a)
}

func (h movesHub) CreateSpec(a *store.Agent, p *store.Project, secrets map[string]string, start bool) wire.AgentSpec {
	return h.s.createSpec(a, p, secrets, nil, start)
}

func (h movesHub) Dispatch(ctx context.Context, brokerID, method string, req, resp any, key string) error {
	return h.s.disp.Dispatch(ctx, brokerID, method, req, resp, key)
}

func (h movesHub) RecordOutcome(ctx context.Context, agentID string, st wire.AgentStatus, derr error, wantRunning bool) (*store.Agent, error) {
	return h.s.afterDispatch(ctx, agentID, st, derr, wantRunning)
}

func (h movesHub) MintAgentToken(a *store.Agent) string { return h.s.id.MintAgentToken(a) }

func (h movesHub) AgentView(ctx context.Context, a *store.Agent) any {
	return h.s.agentView(ctx, a, nil)
}

func (h movesHub) InFlight(agentID, brokerID string) func() {
	h.s.inflight.add(agentID)
	return func() {
		if h.s.inflight.done(agentID) {
			h.s.settleLater(agentID, brokerID) // a reconnect's inventory passed it by
		}
	}
}
