// Package moves is the Hub's room of moves: an agent reincarnated on
// another Runtime Broker (multi-broker spec, "Moving an Agent to Another
// Runtime Broker"). Its route is POST /api/v1/agents/{agent}/reincarnate;
// the checks and the permission table are pure functions in hub/plan
// (plan_move.go), this room loads what they judge and answers them. The
// operator's side is docs/moves.md.
//
// Who may: agent.lifecycle on the agent (the agent itself needs nothing
// unless it patches itself), the role-delegation rule before any check,
// then plan.MoveAccess for the target. A target the caller cannot see is
// 404 runtime_broker_not_found before any check.
//
// Imports. Of ours: api (the request, the plan, the codes), wire (the
// commands the saga sends), hub/lifecycle (which phases run), hub/authz
// (the caller's rights), hub/httpapi (routes, bodies, the check mark),
// hub/plan (the checks), hub/storeerr and store (records, through the
// Hub's authorizing wrapper). Never the hub package: what the room needs
// of the Hub around it (the agent's load and authorization, whether a
// broker's channel is up, a broker's effective limit) is the Hub
// interface, which hub implements in moves_room.go.
package moves

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// Hub is what the room takes from the Hub around it.
type Hub interface {
	// LoadAgent reads the request's {agent} and authorizes act on it,
	// answering an unknown or hidden one as agent_not_found.
	LoadAgent(ctx context.Context, c *authz.Caller, r *http.Request, act authz.Action) (*store.Agent, error)
	// BrokerOnline reports whether the broker's control channel is up.
	BrokerOnline(brokerID string) bool
	// BrokerLimit is the broker's effective per-broker agent limit (0:
	// unlimited).
	BrokerLimit(ctx context.Context, b *store.Broker) (int, error)

	// What the saga takes. SystemContext is the Hub's own context (the
	// system caller), ended when the Hub closes; Go runs f as the Hub's
	// background work, waited for by its Close.
	SystemContext() context.Context
	Go(f func())
	// AgentSecrets resolves the values of the secrets agent a names for
	// a create sent again by c, refusing what c may not name now.
	AgentSecrets(ctx context.Context, c *authz.Caller, p *store.Project, a *store.Agent) (map[string]string, error)
	// CreateSpec is the broker's create command for a.
	CreateSpec(a *store.Agent, p *store.Project, secrets map[string]string, start bool) wire.AgentSpec
	// Dispatch sends a command to a broker (resp may be nil).
	Dispatch(ctx context.Context, brokerID, method string, req, resp any, key string) error
	// RecordOutcome records a command's answer st on the agent as any
	// lifecycle command's (phase, container, ports, placement, slot).
	RecordOutcome(ctx context.Context, agentID string, st wire.AgentStatus, derr error, wantRunning bool) (*store.Agent, error)
	// MintAgentToken is a fresh token for the agent's next start.
	MintAgentToken(a *store.Agent) string
	// AgentView is the agent as the API shows it.
	AgentView(ctx context.Context, a *store.Agent) any
	// InFlight marks a create or start of the agent on its way (a
	// broker's reconnect then leaves it to the command's answer) until
	// the returned function is called.
	InFlight(agentID, brokerID string) func()
}

// Config is what New needs.
type Config struct {
	Store store.Store // the Hub's authorizing wrapper
	Hub   Hub
	Log   *slog.Logger
	// Hook, a test's, runs before each step of a saga (Hook*): an error
	// fails that step, ErrHalt stops the saga as a killed Hub would.
	Hook func(step string) error
}

// Service is the room.
type Service struct {
	store store.Store
	hub   Hub
	log   *slog.Logger
	hook  func(step string) error
}

// New returns the room over cfg.
func New(cfg Config) *Service {
	return &Service{store: cfg.Store, hub: cfg.Hub, log: cfg.Log, hook: cfg.Hook}
}

// Routes are the room's routes.
func (s *Service) Routes() []httpapi.Route {
	return []httpapi.Route{
		httpapi.Authed("POST /api/v1/agents/{agent}/reincarnate", s.handleReincarnate),
		httpapi.Authed("GET /api/v1/agents/{agent}/moves", s.handleListMoves),
	}
}
