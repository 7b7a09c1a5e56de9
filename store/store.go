// Package store is the Hub's persistence: the Store interface, its records,
// and the errors every implementation returns. store/sql implements it
// once over a dialect; store/sqlite (embedded, modernc.org/sqlite in WAL
// mode) and store/postgres (pgx) are its dialects; store/storetest is the
// conformance suite both pass.
//
// Every method is one transaction: when it returns nil the change is
// durable (it survives kill -9 of the Hub).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/scion-go/scion/api"
)

// Errors. Implementations wrap or return these so callers can use errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict is an optimistic-concurrency failure (Version mismatch)
	// or a state that forbids the change.
	ErrConflict = errors.New("conflict")
	// ErrQuota is returned by Reserve (and CreateAgent with a reservation)
	// when the broker is at its limit.
	ErrQuota = errors.New("quota exceeded")
	// ErrTokenUsed is returned by ConsumeJoinToken for a used or expired token.
	ErrTokenUsed = errors.New("token used or expired")
	// ErrReservationScope is returned by Reserve (and the writes that take
	// a slot) for an agent that holds its reservation on another broker:
	// a reservation is never moved between brokers.
	ErrReservationScope = errors.New("reservation held on another broker")
)

// Project is a project record.
type Project struct {
	ID              string
	Name            string
	GitRemote       string
	SharingMode     string
	DefaultBrokerID string
	ActiveProfile   string
	CreatedBy       string // the creating principal; UpdateProject leaves it alone
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Broker is a Runtime Broker record. Secret is the HMAC key issued at
// register/join; it never leaves the Hub after that response.
type Broker struct {
	ID              string
	Name            string
	Status          string // api.BrokerOnline | api.BrokerOffline
	Version         string
	ProtocolVersion int
	Runtime         string
	Capabilities    []string
	Profiles        []api.BrokerProfile
	// RuntimeTarget is set for a flat Runtime Broker (its one target).
	RuntimeTarget *api.RuntimeTarget
	// WorkspaceStorage is the storage the broker reported in its last
	// hello (nil: it never reported one, an older broker).
	WorkspaceStorage *api.WorkspaceStorage
	Settings         api.BrokerSettings
	AutoProvide      bool
	Secret           []byte
	CreatedBy        string
	LastSeen         time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Agent is an agent record. Version is bumped by every UpdateAgent and
// checked against the caller's copy (optimistic concurrency).
type Agent struct {
	ID        string
	Slug      string
	ProjectID string
	BrokerID  string
	Profile   string
	// Pin is set when the agent was placed on a flat broker; never
	// changed after its create.
	Pin             *api.PinnedRuntimeTarget
	Harness         string
	Image           string
	Command         []string
	Env             map[string]string
	Ports           []int             // container ports the agent asked to publish
	PortMappings    []api.PortMapping // host ports its broker assigned, as last reported
	Phase           string
	StatusMessage   string
	ContainerStatus string
	RunID           string
	Generation      int
	Generations     []api.Generation
	Role            string
	CreatedBy       string
	Delegator       string
	ParentAgentID   string
	Scopes          []string // permissions granted to the agent
	DelegationChain []string // principals it acts for, in order, e.g. ["user:u1", "agent:a7"]
	Passthrough     string   // credential passed through, e.g. "gcp"; "" for none
	SecretNames     []string // names of the secrets it receives
	Payload         json.RawMessage
	Version         int64
	// WorkspacePlacement is where the agent's broker recorded its
	// workspace at its last start (api.Placement*; "" unknown), as its
	// start's answer said.
	WorkspacePlacement string
	// TokenGeneration counts the renewals of the agent's token: a token
	// carries the generation it was minted in, and only the current one
	// (and, for a short grace after TokenRenewedAt, the one before) is
	// accepted. Only RenewAgentToken writes these two (not UpdateAgent,
	// not Version): a renewal never conflicts with a write of the agent.
	TokenGeneration int64
	TokenRenewedAt  time.Time // zero: never renewed; whole seconds
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// CreateAgentOptions is what CreateAgentWith writes together with the
// agent.
type CreateAgentOptions struct {
	// ReserveLimit, when not nil, takes the agent's capacity reservation
	// on its broker (ErrQuota if the broker already holds *ReserveLimit
	// reservations; 0 = unlimited).
	ReserveLimit *int
	// LinkProvider links the agent's broker as a provider of its project
	// (the placement cascade's auto-link); a link already there is kept.
	LinkProvider bool
	// Replace, when not nil, deletes that agent (with its reservation and
	// its agent tokens) first, if it still has Replace.Version: the new
	// agent takes the name of one whose create the broker refused.
	// ErrConflict (and nothing written) if it has changed or is gone.
	Replace *Agent
	// Key, when not nil, claims the caller's Idempotency-Key record for
	// the agent, checked before the agent's own constraints: ErrKeyInUse
	// if the caller holds an unexpired record for the key. On success
	// Key is the record as stored, AgentID set.
	Key *IdempotencyRecord
}

// UpdateAgentOptions is what UpdateAgentWith writes together with the
// agent.
type UpdateAgentOptions struct {
	// ReserveLimit, when not nil, takes the agent's capacity reservation
	// on its broker (a.BrokerID) as Reserve does: ErrQuota if the broker
	// already holds *ReserveLimit reservations (0 = unlimited), nothing to
	// take for an agent already holding its slot there,
	// ErrReservationScope for a slot held on another broker (never moved).
	// Either refusal writes nothing, the agent included.
	ReserveLimit *int
	// MoveReservation, with ReserveLimit, moves the agent's slot: one it
	// holds on another broker is released in the same transaction before
	// the slot on a.BrokerID is taken (a move to another broker, or its
	// rollback). The only write that moves a reservation.
	MoveReservation bool
	// ReleaseReservation releases the agent's slot, wherever it is held,
	// in the same transaction (without ReserveLimit): an agent put back
	// stopped on the broker it was moved from.
	ReleaseReservation bool
	// LinkProvider links a.BrokerID as a provider of the agent's project
	// (a link already there is kept).
	LinkProvider bool
}

// User is a person. Issuer and Subject are the OIDC identity the user
// signs in with (both "" for the bootstrap admin); a non-empty
// (Issuer, Subject) belongs to at most one user.
type User struct {
	ID        string
	Name      string
	Email     string
	Role      string
	Issuer    string
	Subject   string
	CreatedAt time.Time
}

// Token kinds.
const (
	TokenUser  = "user"
	TokenAgent = "agent"
	// TokenMetrics is a scrape token: it reads the Hub's /metrics and
	// nothing else (the API refuses every token but TokenUser).
	TokenMetrics = "metrics"
)

// Token is a bearer token; only its SHA-256 hash is stored.
type Token struct {
	ID        string
	Hash      []byte
	Kind      string // TokenUser | TokenAgent | TokenMetrics
	UserID    string // for user tokens
	AgentID   string // for agent tokens
	ProjectID string // single-project tokens and agent tokens
	Scopes    []string
	Name      string
	ExpiresAt *time.Time
	RevokedAt *time.Time
	CreatedAt time.Time
}

// JoinToken is a one-time broker join token; only its hash is stored.
type JoinToken struct {
	Hash      []byte
	Name      string
	CreatedBy string
	ExpiresAt time.Time
	UsedAt    *time.Time
	CreatedAt time.Time
}

// Page asks for one page of a list. Cursor is the NextCursor of the
// previous page ("" for the first); Limit <= 0 means the default (100),
// and implementations cap it at 1000.
type Page struct {
	Cursor string
	Limit  int
}

// AgentFilter narrows ListAgents. Empty fields match everything.
type AgentFilter struct {
	ProjectID string
	BrokerID  string
	Phase     string
}

// Store is the Hub's database.
type Store interface {
	// Projects. Name is unique.
	CreateProject(ctx context.Context, p *Project) error
	// GetProject looks up by ID, then by name.
	GetProject(ctx context.Context, idOrName string) (*Project, error)
	ListProjects(ctx context.Context, page Page) (items []*Project, next string, total int, err error)
	UpdateProject(ctx context.Context, p *Project) error
	// DeleteProject deletes the project, its provider links, its secrets
	// and its Jobs' ledger rows; ErrConflict while it has agents.
	DeleteProject(ctx context.Context, id string) error

	// Provider links: which brokers provide for which projects.
	LinkProvider(ctx context.Context, projectID, brokerID string) error // idempotent
	UnlinkProvider(ctx context.Context, projectID, brokerID string) error
	ProjectProviders(ctx context.Context, projectID string) ([]string, error)
	BrokerProjects(ctx context.Context, brokerID string) ([]string, error)

	// Brokers. Name is unique.
	CreateBroker(ctx context.Context, b *Broker) error
	// GetBroker looks up by ID, then by name.
	GetBroker(ctx context.Context, idOrName string) (*Broker, error)
	// GetBrokerForProject is GetBroker and whether the broker provides for
	// projectID (ProjectProviders), in one read, for placing an agent on a
	// named broker.
	GetBrokerForProject(ctx context.Context, idOrName, projectID string) (*Broker, bool, error)
	ListBrokers(ctx context.Context, page Page) (items []*Broker, next string, total int, err error)
	UpdateBroker(ctx context.Context, b *Broker) error
	// UpdateBrokerWith reads the broker id, lets fn change the record and
	// writes it back in one transaction, so that two read-modify-writes of
	// one broker (an admin's settings change and a broker's hello) never
	// write back each other's stale fields. An error from fn aborts with
	// nothing written and is returned as is; ErrNotFound when the broker
	// is gone. It returns the record as written.
	UpdateBrokerWith(ctx context.Context, id string, fn func(*Broker) error) (*Broker, error)
	// SetBrokerStatus changes only status and last-seen time.
	SetBrokerStatus(ctx context.Context, id, status string, lastSeen time.Time) error
	// DeleteBroker removes the broker, its provider links, its queued
	// dispatches and its broker secrets (not its Jobs' rows), and clears
	// it as any project's default broker. Without force it is ErrConflict
	// while an agent is assigned to the broker or holds a slot on it. Agents keep their BrokerID and their
	// reservations (a forced deregistration strands them: the Hub cannot
	// know whether their workloads still run); deleting an agent frees its
	// slot.
	DeleteBroker(ctx context.Context, id string, force bool) error

	// Agents. (ProjectID, Slug) is unique.
	//
	// CreateAgent inserts a; when reserveLimit is not nil it also takes a
	// capacity reservation on a.BrokerID in the same transaction, failing
	// with ErrQuota if the broker already holds *reserveLimit reservations
	// (0 = unlimited).
	CreateAgent(ctx context.Context, a *Agent, reserveLimit *int) error
	// CreateAgentWith is CreateAgent that also writes what o asks for in
	// the same transaction, so that a create refused at any step (a used
	// key, a taken name, a full broker) writes nothing at all. linked
	// reports that this call made the provider link (false when o did not
	// ask for one or the link was already there).
	CreateAgentWith(ctx context.Context, a *Agent, o CreateAgentOptions) (linked bool, err error)
	// GetAgent looks up by ID.
	GetAgent(ctx context.Context, id string) (*Agent, error)
	// GetAgentBySlug looks up by project and slug.
	GetAgentBySlug(ctx context.Context, projectID, slug string) (*Agent, error)
	ListAgents(ctx context.Context, f AgentFilter, page Page) (items []*Agent, next string, total int, err error)
	// UpdateAgent writes a if a.Version matches the stored version, then
	// increments a.Version; otherwise ErrConflict. It never writes Pin:
	// the agent keeps the pin of its create whatever a.Pin holds.
	UpdateAgent(ctx context.Context, a *Agent) error
	// UpdateAgentWith is UpdateAgent that also writes what o asks for in
	// the same transaction, so that a write refused at any step (a stale
	// Version, a deleted agent, a full broker) writes nothing at all.
	UpdateAgentWith(ctx context.Context, a *Agent, o UpdateAgentOptions) error
	// DeleteAgent removes the agent and its reservation.
	DeleteAgent(ctx context.Context, id string) error
	// RenewAgentToken moves the agent's TokenGeneration from
	// fromGeneration to fromGeneration+1 and sets TokenRenewedAt to at
	// (whole seconds), if the agent is still at fromGeneration: of two
	// renewals with one token exactly one succeeds, the other gets
	// ErrConflict. ErrNotFound if the agent is gone.
	RenewAgentToken(ctx context.Context, id string, fromGeneration int64, at time.Time) error

	// Capacity reservations: one row per agent holding a slot on a broker.
	// Reserve is idempotent for an agent that already holds a slot on that
	// broker; limit 0 means unlimited. A reservation is never moved: an
	// agent holding its slot on another broker is ErrReservationScope
	// (nothing written; Release, then Reserve, changes brokers).
	Reserve(ctx context.Context, brokerID, agentID string, limit int) error
	Release(ctx context.Context, agentID string) error
	// ReleaseOn frees the agent's slot only if it is held on brokerID:
	// a reconciliation of that broker, which must not free the slot a
	// move has just taken on another.
	ReleaseOn(ctx context.Context, brokerID, agentID string) error
	CountReservations(ctx context.Context, brokerID string) (int, error)
	// ReservationCounts returns reservations per broker ID.
	ReservationCounts(ctx context.Context) (map[string]int, error)
	// ReservedAgents returns the IDs of the agents holding a slot on a
	// broker (for reconciliation after a crash).
	ReservedAgents(ctx context.Context, brokerID string) ([]string, error)

	// Users and tokens.
	//
	// CreateUser inserts u; ErrAlreadyExists for a taken ID or a taken
	// non-empty (Issuer, Subject).
	CreateUser(ctx context.Context, u *User) error
	GetUser(ctx context.Context, id string) (*User, error)
	// GetUserBySubject looks up the user with that OIDC identity;
	// ErrNotFound when none (always for an empty subject).
	GetUserBySubject(ctx context.Context, issuer, subject string) (*User, error)
	// UpdateUser writes u's Name, Email and Role (not its identity or
	// CreatedAt); ErrNotFound if the user is gone.
	UpdateUser(ctx context.Context, u *User) error
	// ListUsers returns every user in ID order.
	ListUsers(ctx context.Context) ([]*User, error)
	// CreateToken inserts t, keeping t.ID when set and filling it in when
	// empty; the hash and the ID are unique (ErrAlreadyExists).
	CreateToken(ctx context.Context, t *Token) error
	// GetToken and GetTokenByHash return revoked and expired tokens too:
	// judging them is the caller's business.
	GetToken(ctx context.Context, id string) (*Token, error)
	GetTokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// GetTokenAndUser is GetTokenByHash and the GetUser of the token's
	// UserID in one read, for authenticating a request; ErrNotFound when
	// there is no such token or no such user.
	GetTokenAndUser(ctx context.Context, hash []byte) (*Token, *User, error)
	// ListTokens returns the tokens whose UserID is userID (none for ""),
	// revoked and expired ones included, newest first (by CreatedAt, then
	// ID). Hash is left nil.
	ListTokens(ctx context.Context, userID string) ([]*Token, error)
	// RevokeToken sets RevokedAt (once: revoking again keeps the first
	// time); ErrNotFound for an unknown ID.
	RevokeToken(ctx context.Context, id string, at time.Time) error
	CreateJoinToken(ctx context.Context, t *JoinToken) error
	// ConsumeJoinToken marks an unused, unexpired token used (atomically:
	// exactly one of two racing consumers succeeds).
	ConsumeJoinToken(ctx context.Context, hash []byte, now time.Time) (*JoinToken, error)
	// JoinBroker consumes the join token (as ConsumeJoinToken) and creates
	// the broker build returns for it (as CreateBroker) in one
	// transaction, and returns that broker. When build refuses or the
	// insert fails (ErrAlreadyExists for a taken name) nothing is written:
	// the token stays usable for a corrected retry. build runs inside the
	// transaction and must not use the store. ErrNotFound for an unknown
	// token, ErrTokenUsed for a used or expired one (build is not called).
	JoinBroker(ctx context.Context, hash []byte, now time.Time, build func(*JoinToken) (*Broker, error)) (*Broker, error)

	// Settings: opaque JSON values by key ("hub_settings", "limits", ...).
	// GetSetting returns ErrNotFound for an unset key.
	GetSetting(ctx context.Context, key string) ([]byte, error)
	// PutSetting stores value unconditionally (and moves its version on).
	PutSetting(ctx context.Context, key string, value []byte) error
	// GetSettingVersion is GetSetting with the value's version: 0 for an
	// unset key (with ErrNotFound), else at least 1, moved on by every
	// write of the key.
	GetSettingVersion(ctx context.Context, key string) ([]byte, int64, error)
	// PutSettingIf stores value only if the key is at version (0: unset)
	// and returns the new version; ErrConflict, and nothing written, when
	// another write came first (a compare-and-set in one statement).
	PutSettingIf(ctx context.Context, key string, value []byte, version int64) (int64, error)

	// The queue of dispatches for offline brokers, and the records of
	// API calls made with an Idempotency-Key (see queue.go).
	DispatchQueue
	IdempotencyKeys

	// Nonces of accepted broker requests (see nonces.go).
	BrokerNonces

	// Secrets, per project and hub-wide (see secrets.go).
	SecretStore

	// Delegated Jobs' ledger and broker-scoped secrets (see jobs.go).
	JobStore
	// Moves' records (see moves.go).
	MoveStore
	BrokerSecretStore

	// Ping checks the database answers (for /readyz).
	Ping(ctx context.Context) error
	Close() error
}
