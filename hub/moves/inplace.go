package moves

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// reincarnateInPlace is a reincarnation without a target broker: the
// agent's next generation on its own broker (plan.ReincarnateInPlace),
// its home rebuilt, its workspace kept, the Hub's preamble and the handoff
// in its new home. It answers the agent as the broker left it; a refusal
// of the broker leaves the agent in the error phase with its reason.
func (s *Service) reincarnateInPlace(ctx context.Context, c *authz.Caller, a *store.Agent, p *store.Project, req *api.ReincarnateRequest, self bool) (int, any, error) {
	// Handed over again, as for any create sent again: decided first.
	secrets, err := s.hub.AgentSecrets(ctx, c, p, a)
	if err != nil {
		return 0, nil, err
	}
	sys := s.hub.SystemContext()
	in := plan.InPlaceInput{Agent: a, Image: req.Image, Role: req.Role, RunID: httpapi.NewID(), Now: time.Now().UTC()}
	if !self && (req.Role != "" || (c.Kind == authz.User && a.Delegator == "" && len(a.DelegationChain) == 0)) {
		in.Delegator = c.Principal()
	}
	if a.BrokerID != "" {
		b, err := s.store.GetBroker(ctx, a.BrokerID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return 0, nil, err
		}
		in.Broker, in.Online = b, err == nil && s.hub.BrokerOnline(a.BrokerID)
	}
	ms, err := s.store.ListMoves(sys, a.ID)
	if err != nil {
		return 0, nil, err
	}
	in.Moving = len(ms) > 0 && ms[0].Outcome == ""
	next, err := plan.ReincarnateInPlace(in)
	if err != nil {
		return 0, nil, err
	}
	limit, err := s.hub.BrokerLimit(ctx, in.Broker)
	if err != nil {
		return 0, nil, err
	}
	if err := s.store.UpdateAgentWith(ctx, next, store.UpdateAgentOptions{ReserveLimit: &limit}); err != nil {
		switch {
		case errors.Is(err, store.ErrQuota):
			return 0, nil, plan.QuotaError(in.Broker, limit)
		case errors.Is(err, store.ErrConflict):
			return 0, nil, api.Conflict(api.CodeConflict, "agent %s changed meanwhile; try again", api.Quote(a.Slug))
		case errors.Is(err, store.ErrReservationScope):
			return 0, nil, plan.ReservationScopeError(a, in.Broker)
		}
		return 0, nil, err
	}
	s.log.Info("agent reincarnated in place", "agent_id", a.ID, "broker_id", a.BrokerID, "generation", next.Generation, "by", c.Principal())
	spec := s.hub.CreateSpec(next, p, secrets, true)
	spec.Reincarnate, spec.KeepWorkspace = true, true
	// A workspace on the export is the agent's there, even where this
	// broker holds no record of it (a move cut short): confirmed, never
	// made anew.
	spec.ConfirmWorkspace = a.WorkspacePlacement == api.PlacementExport
	spec.Handoff = handoffText(next, "reincarnated on runtime broker "+in.Broker.Name, req.Handoff)
	// The broker finishes a keyed create whatever its caller does: so
	// does the Hub, the request's end (a Ctrl-C) notwithstanding.
	wctx := context.WithoutCancel(ctx)
	var st wire.AgentStatus
	done := s.hub.InFlight(a.ID, in.Broker.ID)
	derr := s.hub.Dispatch(wctx, in.Broker.ID, wire.MethodAgentCreate, spec, &st, "reincarnate:"+next.RunID)
	got, err := s.hub.RecordOutcome(wctx, a.ID, st, derr, true)
	done()
	if err == nil {
		err = derr
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.hub.AgentView(ctx, got), nil
}
