package hub

import (
	"context"
	"net/http"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/moves"
	"github.com/scion-go/scion/store"
)

// The room of moves is hub/moves; this is what it takes from the Hub
// (moves.Hub): the agent's load, the channel's liveness, a broker's limit.

func (s *Server) newMoves() *moves.Service {
	return moves.New(moves.Config{Store: s.store, Hub: movesHub{s}, Log: s.log})
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
