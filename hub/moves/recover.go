package moves

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// interruptedMessage is the status message of an agent whose move a Hub
// restart cut short.
const interruptedMessage = api.MoveFailedMessagePrefix + "the move was cut short (the Hub restarted during it); the agent stays on the broker it is assigned to: start it there, or move it again"

// resumeWait bounds how long a resumed cleanup waits for the source to
// connect to the restarted Hub.
const resumeWait = 2 * time.Minute

// Recover ends or resumes the moves a Hub that stopped mid-move left
// running (plan.MoveInterrupted), at the Hub's start: a move cut short
// before its new generation ran ends where the agent is assigned (error
// phase; its slot follows its record, and the broker's reconnect reports
// what really runs), the source left alone; one with only the cleanup
// left has its cleanup run once the source is back.
func (s *Service) Recover(ctx context.Context) error {
	running, err := s.store.RunningMoves(ctx)
	if err != nil {
		return err
	}
	for _, m := range running {
		land := plan.MoveInterrupted(m.Step)
		if land.Resume {
			g := &saga{s: s, m: m}
			s.log.Info("move: resuming the source's cleanup after a Hub restart", "move", m.ID, "agent_id", m.AgentID)
			s.hub.Go(func() { g.resumeCleanup(s.hub.SystemContext()) })
			continue
		}
		s.log.Warn("move cut short by a Hub restart: it ends where the agent is assigned, and the source is not cleaned up",
			"move", m.ID, "agent_id", m.AgentID, "step_done", m.Step, "on_target", land.OnTarget)
		if err := s.markFailed(ctx, m.AgentID, interruptedMessage, false); err != nil && !isGone(err) {
			return err
		}
		m.Outcome, m.SourceCleanup, m.Message = land.Outcome, land.SourceCleanup, interruptedMessage
		// A conflict: the move ended meanwhile (another Hub over the
		// same database ended it, or its own saga did).
		if err := s.store.UpdateMove(ctx, m); err != nil && !isGone(err) && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return nil
}

// resumeCleanup waits (bounded) for the source to connect, then runs the
// cleanup; a source that stays away fails it.
func (g *saga) resumeCleanup(ctx context.Context) {
	deadline := time.Now().Add(resumeWait)
	for !g.s.hub.BrokerOnline(g.m.SourceBrokerID) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := g.cleanup(ctx, nil); err != nil && ctx.Err() == nil {
		g.s.log.Error("move: the resumed cleanup could not record its outcome", "move", g.m.ID, "err", err)
	}
}

// isGone: the agent (and with it its move) was deleted meanwhile.
func isGone(err error) bool { return errors.Is(err, store.ErrNotFound) }
