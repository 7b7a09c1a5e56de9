package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/scion-go/scion/api"
)

// Job is one delegated Job's ledger row (ADR-0046). ID is the Hub's;
// Name is the Kubernetes Job's name on the spoke.
type Job struct {
	ID              string
	ProjectID       string
	AgentID         string
	BrokerID        string
	Cluster         string
	Tier            string
	Namespace       string
	Name            string
	Image           string
	Command         []string
	GPUs            int
	Queue           string
	DeadlineSeconds int64
	State           api.JobState
	Message         string
	CreatedBy       string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	ExitCode        *int
	Result          json.RawMessage
	Error           *api.JobError
	// Logs and Trace are read by GetJob only (lists leave them empty);
	// LogBytes and TraceBytes are always filled. Both are bytes as the
	// pod wrote them (NUL and invalid UTF-8 survive). LogBytes and
	// TraceBytes are the store's: every write sets them to len(Logs) and
	// len(Trace), whatever the caller put there. An empty Trace or Result
	// is stored as none and reads back nil; Result must be valid JSON.
	Logs       string
	Trace      []byte
	LogBytes   int
	TraceBytes int
}

// JobFilter narrows ListJobs. Empty fields match everything; ProjectIDs
// non-nil limits to those projects (an empty non-nil slice: none). Each
// of ProjectIDs is one bind parameter: keep it to thousands, not tens of
// thousands (SQLite allows 32766 a statement).
type JobFilter struct {
	ProjectID  string
	ProjectIDs []string
	AgentID    string
	BrokerID   string
	State      api.JobState
}

// JobStore is the Job ledger. Deleting a project deletes its Jobs' rows;
// deleting an agent or a broker keeps them (the ledger is history).
type JobStore interface {
	// CreateJob inserts j (j.ID set by the caller, a UUIDv7 filled in
	// when empty; CreatedAt/UpdatedAt now when zero) and writes the row as
	// stored back into j; ErrAlreadyExists for a taken ID, ErrNotFound
	// when j.ProjectID names no project.
	CreateJob(ctx context.Context, j *Job) error
	// GetJob returns the row with Logs and Trace, or ErrNotFound.
	GetJob(ctx context.Context, id string) (*Job, error)
	// ListJobs pages by ID (oldest first), Logs and Trace left empty.
	ListJobs(ctx context.Context, f JobFilter, page Page) (items []*Job, next string, total int, err error)
	// UpdateJobWith reads the row (Logs and Trace included), lets fn
	// change it and writes it back in one row-locked transaction
	// (UpdatedAt set to now; fn cannot change ID or CreatedAt), and
	// returns the row as written. An error from fn aborts with nothing
	// written and is returned as is; ErrNotFound when the row is gone (fn
	// is not called).
	UpdateJobWith(ctx context.Context, id string, fn func(*Job) error) (*Job, error)
	// DeleteJob removes a row (a run the broker refused); ErrNotFound if
	// there is none.
	DeleteJob(ctx context.Context, id string) error
	// ExpirePendingJobs moves every Job still pending that was created
	// before `before` (strictly) and has no Name (its broker never
	// answered the run: an accepted Job is followed by its broker, which
	// reports it in time) to state error with Message msg, Error
	// {"status":"error", its cluster, its tier, msg} and FinishedAt now,
	// and returns how many (run at Hub start: a Hub killed between writing
	// the row and the broker's answer leaves one).
	ExpirePendingJobs(ctx context.Context, before time.Time, msg string) (int, error)
}

// BrokerSecret is a secret scoped to one broker (a spoke's kubeconfig, a
// bastion key), encrypted by the Hub. (BrokerID, Name) is unique. It is
// never delivered to an agent: agents name only Secret rows.
type BrokerSecret struct {
	BrokerID   string
	Name       string
	Ciphertext []byte
	CreatedBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// BrokerSecretStore stores broker-scoped secrets. Deleting a broker
// deletes its secrets in the same transaction.
type BrokerSecretStore interface {
	// PutBrokerSecret inserts or replaces (keeping CreatedAt, CreatedBy),
	// as PutSecret; ErrNotFound when BrokerID names no broker.
	PutBrokerSecret(ctx context.Context, s *BrokerSecret) error
	GetBrokerSecret(ctx context.Context, brokerID, name string) (*BrokerSecret, error)
	// ListBrokerSecrets sorted by name, Ciphertext nil.
	ListBrokerSecrets(ctx context.Context, brokerID string) ([]*BrokerSecret, error)
	DeleteBrokerSecret(ctx context.Context, brokerID, name string) error
}
