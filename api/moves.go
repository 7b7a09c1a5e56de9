package api

import (
	"time"
	"unicode/utf8"
)

// Moving an agent to another Runtime Broker (multi-broker spec, "Moving an
// Agent to Another Runtime Broker"): the checks the Hub runs, in their
// fixed order, and the verdict a dry run answers.

// The move checks, in the order the Hub runs them.
const (
	CheckRuntimeTarget            = "runtime_target"
	CheckWorkspaceMode            = "workspace_mode"
	CheckWorkspaceStorageReported = "workspace_storage_reported"
	CheckSameExport               = "same_export"
	CheckWorkspaceOnExport        = "workspace_on_export"
	CheckWorkspaceRecreatable     = "workspace_recreatable"
	CheckTargetProfile            = "target_profile"
	CheckTargetHealth             = "target_health"
	CheckAccess                   = "access"
	CheckCapability               = "capability"
	CheckCapacity                 = "capacity"
)

// MoveCheckOrder is every move check in the order the Hub runs them.
var MoveCheckOrder = []string{
	CheckRuntimeTarget, CheckWorkspaceMode, CheckWorkspaceStorageReported, CheckSameExport,
	CheckWorkspaceOnExport, CheckWorkspaceRecreatable, CheckTargetProfile, CheckTargetHealth,
	CheckAccess, CheckCapability, CheckCapacity,
}

// A move check's status: CheckPassed or CheckFailed (as a probe's), or
// one of these.
const (
	CheckNotEvaluated = "not_evaluated"
	CheckWaived       = "waived"
)

// Transfer modes of an eligible move.
const (
	// TransferExport: both brokers mount the same export; the target
	// sees the very workspace directory the source used.
	TransferExport = "export"
	// TransferRecreate: a forced move that gives up the source's
	// workspace and makes a fresh clone-per-agent or empty-per-agent one
	// on the target (not enabled yet: executing it answers 501).
	TransferRecreate = "recreate"
)

// Where a broker recorded an agent's workspace at its last start.
const (
	PlacementUnknown = ""       // not started since the broker began recording
	PlacementExport  = "export" // on the broker's workspace export
	PlacementLocal   = "local"  // on the broker's own disk
)

// MoveCheck is one check's outcome.
type MoveCheck struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// MoveConsequences say what a move keeps in place, carries to the target,
// recreates there and loses.
type MoveConsequences struct {
	Kept      []string `json:"kept"`
	Carried   []string `json:"carried"`
	Recreated []string `json:"recreated"`
	Lost      []string `json:"lost"`
}

// MovePlan is a move's verdict: every check, and for an eligible move its
// transfer mode and consequences. A refused move's answer is the error of
// its first failing check, with this plan in the error's details.plan.
type MovePlan struct {
	Agent        string           `json:"agent"`
	Source       string           `json:"sourceBroker"`
	Target       string           `json:"targetBroker"`
	Eligible     bool             `json:"eligible"`
	TransferMode string           `json:"transferMode,omitempty"`
	Checks       []MoveCheck      `json:"checks"`
	Consequences MoveConsequences `json:"consequences"`
	// Forceable: the move was refused on a check --force waives; the CLI
	// prints the --dry-run --force hint.
	Forceable bool `json:"forceable,omitempty"`
}

// MaxHandoffLen bounds a reincarnation's handoff: it becomes part of the
// new generation's first prompt, and is kept with the generation.
const MaxHandoffLen = 64 << 10

// ReincarnateRequest is the body of POST /agents/{agent}/reincarnate.
// With Broker it is a move to that broker (by name or ID); DryRun runs
// the checks only and answers the plan; Force allows a recreated
// workspace where the export cannot carry it (only a dry run may use it
// for now). Image and Role are patch flags: the checks judge the agent as
// they leave it.
type ReincarnateRequest struct {
	Broker  string `json:"broker,omitempty"`
	DryRun  bool   `json:"dryRun,omitempty"`
	Force   bool   `json:"force,omitempty"`
	Handoff string `json:"handoff,omitempty"`
	Image   string `json:"image,omitempty"`
	Role    string `json:"role,omitempty"`
}

// Validate is the one check of a reincarnation request, the CLI's and the
// Hub's.
func (r *ReincarnateRequest) Validate() error {
	if err := CheckText("broker", r.Broker, MaxRefLen); err != nil {
		return err
	}
	if err := CheckImage("image", r.Image); err != nil {
		return err
	}
	if err := CheckText("role", r.Role, MaxRefLen); err != nil {
		return err
	}
	if len(r.Handoff) > MaxHandoffLen {
		return BadRequest("handoff is too long: %d bytes, at most %d", len(r.Handoff), MaxHandoffLen)
	}
	if !utf8.ValidString(r.Handoff) {
		return BadRequest("handoff is not valid UTF-8")
	}
	if (r.Force || r.DryRun) && r.Broker == "" {
		return BadRequest("force and dryRun apply to a move: name the target with broker")
	}
	return nil
}

// The steps of a move's saga (multi-broker spec, "What happens during a
// move"), in order; a move's record keeps the last one done.
const (
	// MoveStepAccepted: answered 202; nothing done yet.
	MoveStepAccepted = "accepted"
	// MoveStepStopped: the checks ran again and passed, and the agent is
	// stopped on the source.
	MoveStepStopped = "stopped"
	// MoveStepAssigned: its quota moved, it is assigned to the target,
	// and the target is linked to the project if it was not: one
	// transaction, so none of the three is ever done without the others.
	MoveStepAssigned = "assigned"
	// MoveStepProvisioned: the target provisioned it, having confirmed
	// the workspace through its own mount.
	MoveStepProvisioned = "provisioned"
	// MoveStepStarted: the new generation runs on the target.
	MoveStepStarted = "started"
	// MoveStepCleaned: the source was asked to remove its local copy
	// (whatever the answer: see SourceCleanup).
	MoveStepCleaned = "cleaned"
)

// A move's outcome, once it has ended.
const (
	MoveCompleted = "completed"
	MoveFailed    = "failed"
)

// What became of the source's local copy of a moved agent (a move
// record's sourceCleanup); a failure is CleanupFailedPrefix and the
// reason.
const (
	CleanupDone             = "done"
	CleanupFailedPrefix     = "failed:"
	CleanupNoRunID          = "skipped:no-run-id"
	CleanupAmbiguousStart   = "skipped:ambiguous-start"
	CleanupInterrupted      = "skipped:interrupted"
	MoveFailedMessagePrefix = "reincarnation failed: "
)

// AgentMove is a move's record as the API shows it.
type AgentMove struct {
	ID            string    `json:"id"`
	Agent         string    `json:"agentId"`
	Source        string    `json:"sourceBrokerId"`
	Target        string    `json:"targetBrokerId"`
	Step          string    `json:"step"`
	Outcome       string    `json:"outcome,omitempty"`
	SourceCleanup string    `json:"sourceCleanup,omitempty"`
	Message       string    `json:"message,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// MoveAccepted is the 202 answer to an eligible move: the record of the
// move now running in the background, and the plan its checks made.
type MoveAccepted struct {
	Move AgentMove `json:"move"`
	Plan MovePlan  `json:"plan"`
}

// AgentMoves is the answer of GET /agents/{agent}/moves, newest first.
type AgentMoves struct {
	Moves []AgentMove `json:"moves"`
}
