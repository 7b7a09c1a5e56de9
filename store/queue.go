package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Dispatch statuses. A dispatch is pending until it is delivered to its
// broker (whatever the broker answered), failed (given up on), or
// skipped (no longer applicable when its turn came: the agent was deleted
// or moved to another broker or run).
const (
	DispatchPending   = "pending"
	DispatchDelivered = "delivered"
	DispatchFailed    = "failed"
	DispatchSkipped   = "skipped"
)

// Dispatch is a command for a Runtime Broker that was offline when it was
// given (the spec queues stops), kept in the Hub's database until the
// broker reconnects.
type Dispatch struct {
	// ID (a UUIDv7, filled in when empty) names the dispatch.
	ID string
	// Seq is the delivery order, assigned by the store on enqueue and
	// never reused.
	Seq      int64
	BrokerID string
	AgentID  string
	RunID    string
	Method   string          // a wire method, e.g. agent.stop
	Body     json.RawMessage // the request body, kept byte for byte
	// Key is the idempotency key sent with every delivery attempt, so
	// that the broker runs the command once however often it is sent.
	// Empty on enqueue means "queued:" + ID.
	Key       string
	Status    string
	Attempts  int
	Result    string // why it finished, or the last attempt's error
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DispatchQueue is the durable queue of dispatches for offline brokers.
// Every method is one transaction.
type DispatchQueue interface {
	// EnqueueDispatch stores d as pending and reports created. At most one
	// dispatch per agent and method is pending: if one is, d is
	// overwritten with it, created is false and nothing is written. When
	// agent is not nil and d is created, agent is written as by
	// UpdateAgent in the same transaction (ErrConflict on a stale Version
	// writes nothing), so the agent never shows a queued command the queue
	// does not hold, or the reverse.
	EnqueueDispatch(ctx context.Context, d *Dispatch, agent *Agent) (created bool, err error)
	// PendingDispatches returns up to limit (<= 0: 100, at most 1000)
	// pending dispatches of a broker in delivery order.
	PendingDispatches(ctx context.Context, brokerID string, limit int) ([]*Dispatch, error)
	GetDispatch(ctx context.Context, id string) (*Dispatch, error)
	// NoteDispatchAttempt counts one delivery attempt of a pending
	// dispatch that did not finish, with its error, and returns the
	// attempts so far. ErrNotFound if there is no such dispatch,
	// ErrConflict if it is no longer pending.
	NoteDispatchAttempt(ctx context.Context, id, result string) (attempts int, err error)
	// FinishDispatch moves a pending dispatch to status (delivered,
	// failed or skipped) with result. ErrNotFound if there is no such
	// dispatch, ErrConflict if it is no longer pending (so of two Hubs
	// racing to finish it, one learns it lost).
	FinishDispatch(ctx context.Context, id, status, result string) error
	// PruneDispatches deletes finished dispatches last changed before
	// cutoff and returns how many. Pending ones are never pruned.
	PruneDispatches(ctx context.Context, cutoff time.Time) (int, error)
}

// ErrKeyInUse is returned by CreateAgentWith when the caller already used
// the idempotency key (and its record has not expired).
var ErrKeyInUse = errors.New("idempotency key in use")

// IdempotencyRecord remembers a mutating API call made with an
// Idempotency-Key header, so that a retry gets the original answer
// instead of doing the work again.
type IdempotencyRecord struct {
	Caller      string // "kind:id" of the caller; keys are per caller
	Key         string
	RequestHash string // of the request's canonical body
	AgentID     string // what the call created
	// Status and Response are the HTTP answer; Status is 0 while the call
	// is still running (or its Hub died before it answered).
	Status    int
	Response  []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// IdempotencyKeys stores IdempotencyRecords (claimed by
// Store.CreateAgentWith). A record past its ExpiresAt is treated as absent
// and may be claimed again.
type IdempotencyKeys interface {
	// GetIdempotencyRecord returns the caller's unexpired record for key,
	// or ErrNotFound.
	GetIdempotencyRecord(ctx context.Context, caller, key string, now time.Time) (*IdempotencyRecord, error)
	// CompleteIdempotencyRecord stores the answer of the call that holds
	// the record. ErrNotFound if there is no such record.
	CompleteIdempotencyRecord(ctx context.Context, caller, key string, status int, response []byte) error
	// PruneIdempotencyRecords deletes records expired at now.
	PruneIdempotencyRecords(ctx context.Context, now time.Time) (int, error)
}
