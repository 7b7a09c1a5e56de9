package store

import (
	"context"
	"time"
)

// Move is the record of one move of an agent to another broker (a
// reincarnation with a target broker): the saga's progress, persisted step
// by step so that a Hub that restarts mid-move knows where it was, and
// afterwards its outcome (multi-broker spec, "What happens during a
// move"). An agent has at most one move running (Outcome ""); its
// records go with the agent.
type Move struct {
	ID             string
	AgentID        string
	SourceBrokerID string
	TargetBrokerID string
	// Step is the last step the saga completed (api.MoveStep*).
	Step string
	// Outcome is "" while the move runs, then api.MoveCompleted or
	// api.MoveFailed.
	Outcome string
	// SourceCleanup is what became of the source's local copy
	// (api.Cleanup*, or "failed:<reason>"); "" until decided.
	SourceCleanup string
	// Message is why a failed move failed (the agent's status message).
	Message string
	// Handoff is the new generation's preamble and handoff.
	Handoff string
	// Previous is the agent's configuration before the move, the saga's
	// to restore on a rollback (opaque JSON to the store).
	Previous  []byte
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MoveStore keeps moves' records.
type MoveStore interface {
	// CreateMove inserts m (ID and times filled in when empty);
	// ErrAlreadyExists when its agent has a move running, ErrNotFound
	// when the agent is gone.
	CreateMove(ctx context.Context, m *Move) error
	// UpdateMove writes m's Step, Outcome, SourceCleanup, Message and
	// Previous (and UpdatedAt) while the stored move still runs: ErrConflict once
	// it has ended (another writer ended it), ErrNotFound when it is gone.
	UpdateMove(ctx context.Context, m *Move) error
	GetMove(ctx context.Context, id string) (*Move, error)
	// ListMoves returns the agent's moves, newest first.
	ListMoves(ctx context.Context, agentID string) ([]*Move, error)
	// RunningMoves returns every move that has not ended, oldest first.
	RunningMoves(ctx context.Context) ([]*Move, error)
}
