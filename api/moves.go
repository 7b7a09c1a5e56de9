package api

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
