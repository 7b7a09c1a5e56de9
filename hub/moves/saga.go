package moves

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// The saga of a move, after its 202 (multi-broker spec, "What happens
// during a move"). Each step is persisted on the move's record once done
// (api.MoveStep*), so that a Hub that dies mid-move finds at its next
// start where it was (recover.go). A failed step lands as
// plan.MoveStepFailed says. The saga runs as the system, from the Hub's
// context: the request that started it was authorized and has ended.

// Saga steps as the test hook names them, before each runs.
const (
	HookChecks    = "checks"
	HookStop      = "stop"
	HookAssign    = "assign"
	HookProvision = "provision"
	HookStart     = "start"
	HookCleanup   = "cleanup"
)

// ErrHalt, returned by the test hook, stops the saga where it is, writing
// nothing more: what a Hub killed at that point leaves.
var ErrHalt = errors.New("moves: saga halted by the test hook")

// previous is the agent as the stop left it on the source, kept on the
// move's record (store.Move.Previous) for a rollback to restore.
type previous struct {
	BrokerID    string           `json:"brokerId"`
	RunID       string           `json:"runId,omitempty"`
	Generation  int              `json:"generation"`
	Generations []api.Generation `json:"generations,omitempty"`
	Image       string           `json:"image,omitempty"`
	Role        string           `json:"role,omitempty"`
	Delegator   string           `json:"delegator,omitempty"`
	Placement   string           `json:"workspacePlacement,omitempty"`
	Container   string           `json:"containerStatus,omitempty"`
}

// patch is what the request changes on the agent with the move.
type patch struct {
	Image, Role, Delegator string
}

// saga is one move running.
type saga struct {
	s       *Service
	m       *store.Move
	project *store.Project
	secrets map[string]string
	patch   patch
	// target and source are the brokers' records as the accept read
	// them; the checks read them again.
	target, source *store.Broker
}

// hook runs the test hook before step.
func (g *saga) hook(step string) error {
	if g.s.hook == nil {
		return nil
	}
	return g.s.hook(step)
}

// run runs the saga to its end (or to a halt).
func (g *saga) run(ctx context.Context) {
	err := g.steps(ctx)
	if errors.Is(err, ErrHalt) || ctx.Err() != nil {
		return // the Hub is going away: its next start ends the move
	}
	if err != nil {
		g.s.log.Error("move: the saga could not record its outcome", "move", g.m.ID, "agent_id", g.m.AgentID, "err", err)
	}
}

// steps runs each step; a failed one lands as plan.MoveStepFailed says.
// It returns only what could not be recorded.
func (g *saga) steps(ctx context.Context) error {
	type step struct {
		hook string
		do   func(context.Context) error
		done string
	}
	for _, st := range []step{
		{HookChecks, g.recheck, ""},
		{HookStop, g.stop, api.MoveStepStopped},
		{HookAssign, g.assign, api.MoveStepAssigned},
		{HookProvision, g.provision, api.MoveStepProvisioned},
		{HookStart, g.start, api.MoveStepStarted},
	} {
		err := g.hook(st.hook)
		if errors.Is(err, ErrHalt) {
			return err
		}
		if err == nil {
			err = st.do(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return g.fail(ctx, err)
		}
		if st.done == "" {
			continue
		}
		g.m.Step = st.done
		if err := g.s.store.UpdateMove(ctx, g.m); err != nil {
			return err
		}
	}
	err := g.hook(HookCleanup)
	if errors.Is(err, ErrHalt) {
		return err
	}
	return g.cleanup(ctx, err)
}

// recheck runs the checks again on what the stores now hold: the access
// answer is the request's, which passed.
func (g *saga) recheck(ctx context.Context) error {
	a, err := g.s.store.GetAgent(ctx, g.m.AgentID)
	if err != nil {
		return err
	}
	in, err := g.s.loadChecks(ctx, a, g.project, g.m.TargetBrokerID, g.patch)
	if err != nil {
		return err
	}
	if v := plan.MoveChecks(in); v.Err != nil {
		return v.Err
	}
	if a.BrokerID != g.m.SourceBrokerID {
		return api.Conflict(api.CodeConflict, "agent %s is no longer on runtime broker %s", api.Quote(a.Slug), api.Quote(g.source.Name))
	}
	return nil
}

// stop stops the agent on the source (nothing to stop if it does not
// run) and keeps the agent as the stop left it for a rollback.
func (g *saga) stop(ctx context.Context) error {
	a, err := g.s.store.GetAgent(ctx, g.m.AgentID)
	if err != nil {
		return err
	}
	if lifecycle.HoldsSlot(a.Phase) || a.ContainerStatus == api.ContainerRunning {
		var st wire.AgentStatus
		derr := g.s.hub.Dispatch(ctx, g.m.SourceBrokerID, wire.MethodAgentStop, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, &st, g.key("stop"))
		if derr != nil {
			return &stepError{"stop on the source broker failed", derr}
		}
		if a, err = g.s.hub.RecordOutcome(ctx, a.ID, st, nil, false); err != nil {
			return err
		}
	}
	prev, err := json.Marshal(previous{BrokerID: a.BrokerID, RunID: a.RunID, Generation: a.Generation, Generations: a.Generations,
		Image: a.Image, Role: a.Role, Delegator: a.Delegator, Placement: a.WorkspacePlacement, Container: a.ContainerStatus})
	if err != nil {
		return err
	}
	g.m.Previous = prev
	return nil
}

// assign moves the agent's quota to the target, assigns it there as its
// next generation (the request's patch applied) and links the target to
// the project if it does not serve it: one transaction. A full target
// refuses it, the agent left stopped on the source.
func (g *saga) assign(ctx context.Context) error {
	// The target as it is now: its limit may have changed since the
	// request was checked.
	dst, serves, err := g.s.store.GetBrokerForProject(ctx, g.target.ID, g.project.ID)
	if err != nil {
		return err
	}
	g.target = dst
	limit, err := g.s.hub.BrokerLimit(ctx, dst)
	if err != nil {
		return err
	}
	var prev previous
	if err := json.Unmarshal(g.m.Previous, &prev); err != nil {
		return err
	}
	for range 10 {
		a, err := g.s.store.GetAgent(ctx, g.m.AgentID)
		if err != nil {
			return err
		}
		// Changed since the stop (started again, reincarnated, moved):
		// the move gives way rather than take it from under that.
		if a.BrokerID != g.m.SourceBrokerID || a.RunID != prev.RunID || lifecycle.HoldsSlot(a.Phase) {
			return api.Conflict(api.CodeConflict, "agent %s was changed during the move (phase %s)", api.Quote(a.Slug), a.Phase)
		}
		next := *a
		next.BrokerID, next.RunID = g.target.ID, httpapi.NewID()
		next.Generation = a.Generation + 1
		next.Generations = append(append([]api.Generation(nil), a.Generations...), api.Generation{Number: next.Generation,
			BrokerID: g.target.ID, RunID: next.RunID, StartedAt: time.Now().UTC(), Reason: "moved from runtime broker " + g.source.Name})
		if g.patch.Image != "" {
			next.Image = g.patch.Image
		}
		if g.patch.Role != "" {
			next.Role = g.patch.Role
		}
		if g.patch.Delegator != "" {
			next.Delegator = g.patch.Delegator
		}
		next.Phase, next.ContainerStatus, next.StatusMessage, next.PortMappings = api.PhaseProvisioning, "", "", nil
		next.UpdatedAt = time.Now().UTC()
		err = g.s.store.UpdateAgentWith(ctx, &next, store.UpdateAgentOptions{ReserveLimit: &limit, MoveReservation: true, LinkProvider: !serves})
		switch {
		case err == nil:
			if !serves {
				g.s.log.Info("move: the target now serves the project", "move", g.m.ID, "broker_id", g.target.ID, "project_id", g.project.ID)
			}
			return nil
		case errors.Is(err, store.ErrQuota):
			return &stepError{"target broker quota", plan.QuotaError(g.target, limit)}
		case !errors.Is(err, store.ErrConflict):
			return err
		}
	}
	return api.Conflict(api.CodeConflict, "agent is being changed concurrently")
}

// provision has the target provision the agent: it confirms the
// workspace through its own mount first, or refuses.
func (g *saga) provision(ctx context.Context) error {
	a, err := g.assigned(ctx)
	if err != nil {
		return err
	}
	spec := g.s.hub.CreateSpec(a, g.project, g.secrets, false)
	spec.Moved, spec.Handoff = true, g.handoff(a)
	var st wire.AgentStatus
	defer g.s.hub.InFlight(a.ID, g.target.ID)()
	if derr := g.s.hub.Dispatch(ctx, g.target.ID, wire.MethodAgentCreate, spec, &st, g.key("create")); derr != nil {
		return &stepError{"provision on the target broker failed", derr}
	}
	_, err = g.s.hub.RecordOutcome(ctx, a.ID, st, nil, true)
	return err
}

// start starts the new generation on the target.
func (g *saga) start(ctx context.Context) error {
	a, err := g.assigned(ctx)
	if err != nil {
		return err
	}
	// The slot the assignment took is held while the agent provisions;
	// should a report have freed it meanwhile (the container seen
	// created, not started), the start takes it again, under the
	// target's limit, as any start does.
	limit, err := g.s.hub.BrokerLimit(ctx, g.target)
	if err != nil {
		return err
	}
	if err := g.s.store.Reserve(ctx, g.target.ID, a.ID, limit); err != nil {
		if errors.Is(err, store.ErrQuota) {
			return &stepError{"target broker quota", plan.QuotaError(g.target, limit)}
		}
		return err
	}
	var st wire.AgentStatus
	defer g.s.hub.InFlight(a.ID, g.target.ID)()
	ref := wire.AgentRef{AgentID: a.ID, RunID: a.RunID, AgentToken: g.s.hub.MintAgentToken(a)}
	if derr := g.s.hub.Dispatch(ctx, g.target.ID, wire.MethodAgentStart, ref, &st, g.key("start")); derr != nil {
		return &stepError{"start on the target broker failed", derr}
	}
	_, err = g.s.hub.RecordOutcome(ctx, a.ID, st, nil, true)
	return err
}

// assigned reads the agent, which must still be the move's: on the target,
// its run the one the assignment gave it (kept on the record's first
// generation link after the source's).
func (g *saga) assigned(ctx context.Context) (*store.Agent, error) {
	a, err := g.s.store.GetAgent(ctx, g.m.AgentID)
	if err != nil {
		return nil, err
	}
	last := api.Generation{}
	if n := len(a.Generations); n > 0 {
		last = a.Generations[n-1]
	}
	if a.BrokerID != g.m.TargetBrokerID || last.RunID != a.RunID || last.BrokerID != g.m.TargetBrokerID {
		return nil, api.Conflict(api.CodeConflict, "agent %s was changed during the move", api.Quote(a.Slug))
	}
	return a, nil
}

// cleanup asks the source to remove its local copy of the agent, by the
// run it had there, and ends the move as completed whatever the answer.
// injected, a test hook's, stands for the source's failure.
func (g *saga) cleanup(ctx context.Context, injected error) error {
	var prev previous
	if err := json.Unmarshal(g.m.Previous, &prev); err != nil {
		return fmt.Errorf("move %s: its record of the agent before the move: %w", g.m.ID, err)
	}
	derr := injected
	if prev.RunID != "" && derr == nil {
		derr = g.s.hub.Dispatch(ctx, g.m.SourceBrokerID, wire.MethodAgentCleanup, wire.AgentRef{AgentID: g.m.AgentID, RunID: prev.RunID}, nil, g.key("cleanup"))
		if errors.Is(derr, context.Canceled) || ctx.Err() != nil {
			return ctx.Err()
		}
	}
	g.m.SourceCleanup = plan.MoveCleanupOutcome(prev.RunID, derr)
	switch {
	case prev.RunID == "":
		g.s.log.Warn("move completed; the source was not cleaned up: the agent had no run ID there (an older version started it), and removing it by name could remove its new pod; clean the source up by hand",
			"move", g.m.ID, "agent_id", g.m.AgentID, "source_broker_id", g.m.SourceBrokerID)
	case derr != nil:
		g.s.log.Warn("move completed; the source could not remove its local copy of the agent, left in place: clean the source up by hand",
			"move", g.m.ID, "agent_id", g.m.AgentID, "source_broker_id", g.m.SourceBrokerID, "err", derr)
	}
	g.m.Step, g.m.Outcome = api.MoveStepCleaned, api.MoveCompleted
	return g.s.store.UpdateMove(ctx, g.m)
}

// fail lands a move whose step after g.m.Step failed with err. An agent
// deleted meanwhile takes its move's record with it: nothing to land.
func (g *saga) fail(ctx context.Context, err error) error {
	if _, gerr := g.s.store.GetAgent(ctx, g.m.AgentID); errors.Is(gerr, store.ErrNotFound) {
		g.s.log.Info("move ended: the agent was deleted during it", "move", g.m.ID, "agent_id", g.m.AgentID)
		return nil
	}
	land := plan.MoveStepFailed(g.m.Step, unknownOutcome(err))
	msg := failedMessage(err)
	g.s.log.Warn("move failed", "move", g.m.ID, "agent_id", g.m.AgentID, "step_done", g.m.Step, "rollback", land.Rollback, "err", err)
	if land.Rollback {
		if rerr := g.rollback(ctx, msg); rerr != nil {
			return rerr
		}
	} else if err := g.s.markFailed(ctx, g.m.AgentID, msg, land.OnTarget); err != nil {
		return err
	}
	g.m.Outcome, g.m.SourceCleanup, g.m.Message = land.Outcome, land.SourceCleanup, msg
	return g.s.store.UpdateMove(ctx, g.m)
}

// rollback removes the agent's state on the target (best effort) and
// puts the agent back on the source, stopped, as the stop left it, with
// no slot. The provider link the move made stays.
func (g *saga) rollback(ctx context.Context, msg string) error {
	a, err := g.s.store.GetAgent(ctx, g.m.AgentID)
	if err != nil {
		return err
	}
	if derr := g.s.hub.Dispatch(ctx, g.target.ID, wire.MethodAgentCleanup, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, nil, g.key("rollback")); derr != nil {
		g.s.log.Warn("move rolled back; the agent's state on the target could not be removed: clean the target up by hand (the target is not running the agent)",
			"move", g.m.ID, "agent_id", a.ID, "target_broker_id", g.target.ID, "err", derr)
	}
	var prev previous
	if err := json.Unmarshal(g.m.Previous, &prev); err != nil {
		return fmt.Errorf("move %s: its record of the agent before the move: %w", g.m.ID, err)
	}
	for range 10 {
		back := *a
		back.BrokerID, back.RunID, back.Generation, back.Generations = prev.BrokerID, prev.RunID, prev.Generation, prev.Generations
		back.Image, back.Role, back.Delegator, back.WorkspacePlacement = prev.Image, prev.Role, prev.Delegator, prev.Placement
		back.Phase, back.ContainerStatus, back.StatusMessage, back.PortMappings = api.PhaseError, prev.Container, msg, nil
		back.UpdatedAt = time.Now().UTC()
		err := g.s.store.UpdateAgentWith(ctx, &back, store.UpdateAgentOptions{ReleaseReservation: true})
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		if a, err = g.s.store.GetAgent(ctx, g.m.AgentID); err != nil {
			return err
		}
	}
	return api.Conflict(api.CodeConflict, "agent is being changed concurrently")
}

// handoff is the new generation's first words: the Hub's preamble, then
// the handoff the request gave.
func (g *saga) handoff(a *store.Agent) string {
	return handoffText(a, "moved from runtime broker "+g.source.Name+" to "+g.target.Name, g.m.Handoff)
}

// handoffText is a new generation's preamble, saying what happened, and
// the handoff the request gave.
func handoffText(a *store.Agent, what, handoff string) string {
	pre := fmt.Sprintf("# Reincarnation\n\nYou are agent %s, generation %d, %s. "+
		"Your workspace is the one you had, uncommitted and unpushed changes included. Your home was rebuilt "+
		"(a persistent home on the NFS share excepted) and your harness's session history was not carried over: "+
		"what follows is your handoff.\n", a.Slug, a.Generation, what)
	if handoff == "" {
		return pre + "\n(No handoff was given.)\n"
	}
	return pre + "\n" + handoff + "\n"
}

// key is the idempotency key of the saga's command for step: a resend
// (the channel's, after a reconnect) is answered from the broker's record.
func (g *saga) key(step string) string { return "move:" + g.m.ID + ":" + step }

// stepError is a step's failure as the agent's status message says it:
// what failed, then the broker's (or the store's) reason.
type stepError struct {
	what string
	err  error
}

func (e *stepError) Error() string { return e.what + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// failedMessage is the status message of a move that failed with err.
func failedMessage(err error) string {
	var se *stepError
	what := ""
	if errors.As(err, &se) {
		what, err = se.what+": ", se.err
	}
	reason := err.Error()
	var ae *api.Error
	if errors.As(err, &ae) {
		reason = ae.Message
	}
	return api.MoveFailedMessagePrefix + what + httpapi.ScrubAddresses(reason)
}

// unknownOutcome reports whether err leaves a command's outcome unknown:
// no answer came (the broker went away, the deadline passed).
func unknownOutcome(err error) bool {
	var e *api.Error
	if !errors.As(err, &e) {
		return true
	}
	switch e.Code {
	case api.CodeBrokerUnavailable, api.CodeBrokerOffline, api.CodeBrokerTimeout:
		return true
	}
	return false
}

// markFailed puts the agent in the error phase with msg, where it is
// assigned; its slot follows (released unless its container may run:
// mayRun, or a running or pending container).
func (s *Service) markFailed(ctx context.Context, agentID, msg string, mayRun bool) error {
	for range 10 {
		a, err := s.store.GetAgent(ctx, agentID)
		if err != nil {
			return err
		}
		a.Phase, a.StatusMessage = api.PhaseError, msg
		a.UpdatedAt = time.Now().UTC()
		// A container that may still run (a move refused before its
		// stop, a start not answered) keeps its slot until a report
		// says otherwise.
		keep := mayRun || a.ContainerStatus == api.ContainerRunning || a.ContainerStatus == api.ContainerPending
		opts := store.UpdateAgentOptions{ReleaseReservation: !keep}
		if keep {
			limit := 0 // it holds its slot, or takes it back whatever the limit: it may run
			opts.ReserveLimit = &limit
		}
		err = s.store.UpdateAgentWith(ctx, a, opts)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return api.Conflict(api.CodeConflict, "agent is being changed concurrently")
}
