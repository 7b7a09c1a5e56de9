package api

import (
	"encoding/json"
	"time"
)

// Agent phases.
const (
	PhaseCreated      = "created"
	PhaseProvisioning = "provisioning"
	PhaseRunning      = "running"
	PhaseStopping     = "stopping"
	PhaseStopped      = "stopped"
	PhaseSuspended    = "suspended"
	PhaseError        = "error"
	PhaseDeleting     = "deleting"
)

// Container statuses reported by brokers (or set by the Hub while a command
// waits, e.g. stop_queued).
const (
	ContainerNone    = ""
	ContainerCreated = "created"
	// ContainerPending: started but not running yet (a Kubernetes pod
	// waiting for a node or its image); the status message says why.
	ContainerPending    = "pending"
	ContainerRunning    = "running"
	ContainerExited     = "exited"
	ContainerPaused     = "paused"
	ContainerMissing    = "missing"
	ContainerStopQueued = "stop_queued"
)

// Broker statuses.
const (
	BrokerOnline  = "online"
	BrokerOffline = "offline"
)

// Project sharing modes.
const (
	SharingWorktreePerAgent = "worktree-per-agent"
	SharingSharedWorkspace  = "shared-workspace"
	SharingClonePerAgent    = "clone-per-agent"
	SharingEmptyPerAgent    = "empty-per-agent"
)

// ValidSharingMode reports whether m is one of the sharing modes.
func ValidSharingMode(m string) bool {
	switch m {
	case SharingWorktreePerAgent, SharingSharedWorkspace, SharingClonePerAgent, SharingEmptyPerAgent:
		return true
	}
	return false
}

// Project is a unit of work that agents belong to.
type Project struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	GitRemote       string    `json:"gitRemote,omitempty"`
	SharingMode     string    `json:"sharingMode"`
	DefaultBrokerID string    `json:"defaultRuntimeBrokerId,omitempty"`
	ActiveProfile   string    `json:"activeProfile,omitempty"`
	Providers       []string  `json:"providers"` // broker IDs that provide for the project
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// ProjectDeleted is the answer of DELETE /projects/{project}: the project
// is gone, and so is what its Runtime Brokers removed for it (the
// Kubernetes runtime's project claims); Queued names the offline brokers
// whose cleanup is queued until they reconnect; Left says what could not
// be removed and why, for an operator to remove by hand.
type ProjectDeleted struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Removed []ProjectResource `json:"removed"`
	Queued  []ProjectResource `json:"queued"`
	Left    []ProjectResource `json:"left"`
}

// ProjectResource is something a Runtime Broker kept for a project.
type ProjectResource struct {
	Broker   string `json:"runtimeBroker"`   // the broker's name
	BrokerID string `json:"runtimeBrokerId"` //
	// Resource is the runtime's name for it ("namespace/claim"); empty in
	// Left when the broker could not be asked.
	Resource string `json:"resource,omitempty"`
	// Reason says why it was left or queued.
	Reason string `json:"reason,omitempty"`
	// Dispatch is the queued cleanup's dispatch ID (Queued only).
	Dispatch string `json:"dispatch,omitempty"`
}

// CreateProjectRequest is the body of POST /projects.
type CreateProjectRequest struct {
	Name          string `json:"name"`
	GitRemote     string `json:"gitRemote,omitempty"`
	SharingMode   string `json:"sharingMode,omitempty"`
	DefaultBroker string `json:"defaultRuntimeBroker,omitempty"` // name or ID
	ActiveProfile string `json:"activeProfile,omitempty"`
}

// UpdateProjectRequest is the body of PATCH /projects/{id}. Nil fields are
// left unchanged; an empty string clears.
type UpdateProjectRequest struct {
	GitRemote     *string `json:"gitRemote,omitempty"`
	SharingMode   *string `json:"sharingMode,omitempty"`
	DefaultBroker *string `json:"defaultRuntimeBroker,omitempty"`
	ActiveProfile *string `json:"activeProfile,omitempty"`
}

// BrokerProfile is a named set of runtime settings a broker offers.
type BrokerProfile struct {
	Name     string            `json:"name"`
	Runtime  string            `json:"runtime"`
	Default  bool              `json:"default,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
}

// WorkspaceStorage is a broker's workspace storage as it reports it in its
// hello (server.workspace_storage): "local", or "nfs" with the first
// share's names, which every broker of the export configures alike.
type WorkspaceStorage struct {
	Type        string `json:"type"`
	Server      string `json:"server,omitempty"`
	Export      string `json:"export,omitempty"`
	SubpathRoot string `json:"subpath_root,omitempty"`
	// PVName is the PersistentVolume of the share (nfs.shares[].pv_name)
	// through which a Kubernetes broker's pods claim it.
	PVName string `json:"pv_name,omitempty"`
	// ExportID is the export identity marker (.scion-export-id) the
	// broker read in subpath_root through its own mount; Healthy says it
	// could (the mount is there and usable). Both are nfs only.
	ExportID string `json:"exportId,omitempty"`
	Healthy  bool   `json:"healthy,omitempty"`
}

// BrokerSettings are per-broker settings an admin may change.
type BrokerSettings struct {
	// MaxAgents caps running agents on this broker: 0 = unlimited, nil =
	// inherit the hub-wide max_agents_per_broker.
	MaxAgents *int `json:"maxAgents,omitempty"`
}

// RuntimeBroker is a machine that runs agents.
type RuntimeBroker struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Status          string          `json:"status"`
	Version         string          `json:"version,omitempty"`
	ProtocolVersion int             `json:"protocolVersion,omitempty"`
	Capabilities    []string        `json:"capabilities"`
	Runtime         string          `json:"runtime,omitempty"`
	Profiles        []BrokerProfile `json:"profiles,omitempty"`
	// RuntimeTarget is set on a flat Runtime Broker: the one runtime
	// target it serves (it then offers no profiles).
	RuntimeTarget      *RuntimeTarget `json:"runtimeTarget,omitempty"`
	Settings           BrokerSettings `json:"settings"`
	AutoProvide        bool           `json:"autoProvide"`
	Projects           []string       `json:"projects"` // project IDs it provides for
	RunningAgents      int            `json:"runningAgents"`
	EffectiveMaxAgents int            `json:"effectiveMaxAgents"` // 0 = unlimited
	LastSeen           *time.Time     `json:"lastSeen,omitempty"`
	CreatedAt          time.Time      `json:"createdAt"`
	UpdatedAt          time.Time      `json:"updatedAt"`
}

// RegisterBrokerRequest is the body of POST /runtime-brokers (register, as
// the signed-in user) and POST /runtime-brokers/join (with a join token).
type RegisterBrokerRequest struct {
	// Name is the broker's name. At join, a token made for a name
	// registers that name, and Name is used only for a token made for none.
	Name        string `json:"name"`
	JoinToken   string `json:"joinToken,omitempty"`
	AutoProvide bool   `json:"autoProvide,omitempty"`
	// RuntimeTarget registers a flat Runtime Broker instance serving that
	// one target (refused with 409 experiment_disabled while the
	// hub.flat_runtime_brokers experiment is off).
	RuntimeTarget *RuntimeTarget `json:"runtimeTarget,omitempty"`
}

// BrokerCredentials are issued once at register/join. The secret signs
// every broker request (HMAC-SHA256 over timestamp, nonce, method, path).
type BrokerCredentials struct {
	BrokerID string `json:"brokerId"`
	Name     string `json:"name"`
	Secret   string `json:"secret"`
	HubURL   string `json:"hubUrl,omitempty"`
}

// UpdateBrokerRequest is the body of PATCH /runtime-brokers/{id}.
type UpdateBrokerRequest struct {
	AutoProvide *bool           `json:"autoProvide,omitempty"`
	Settings    *BrokerSettings `json:"settings,omitempty"`
	// ClearMaxAgents resets maxAgents to "inherit".
	ClearMaxAgents bool `json:"clearMaxAgents,omitempty"`
}

// JoinToken is a one-time token an admin creates for `runtime-broker join`.
type JoinToken struct {
	Token     string    `json:"token"`
	Name      string    `json:"name,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// CreateJoinTokenRequest is the body of POST /runtime-brokers/join-tokens.
type CreateJoinTokenRequest struct {
	Name string `json:"name,omitempty"`
	TTL  string `json:"ttl,omitempty"` // Go duration; default 1h
}

// Agent is a harness running in a container on a broker.
type Agent struct {
	ID         string `json:"id"`
	Slug       string `json:"slug"`
	ProjectID  string `json:"projectId"`
	BrokerID   string `json:"runtimeBrokerId,omitempty"`
	BrokerName string `json:"runtimeBrokerName,omitempty"`
	Profile    string `json:"profile,omitempty"`
	// PinnedRuntimeTarget is set, read-only, on an agent placed on a flat
	// Runtime Broker: that broker and its runtime target.
	PinnedRuntimeTarget *PinnedRuntimeTarget `json:"pinnedRuntimeTarget,omitempty"`
	Harness             string               `json:"harness"`
	Image               string               `json:"image,omitempty"`
	Command             []string             `json:"command,omitempty"`
	Env                 map[string]string    `json:"env,omitempty"`
	Ports               []PortMapping        `json:"ports,omitempty"` // published while the container holds them; see PortMapping
	Phase               string               `json:"phase"`
	StatusMessage       string               `json:"statusMessage,omitempty"`
	ContainerStatus     string               `json:"containerStatus,omitempty"`
	RunID               string               `json:"runId,omitempty"`
	Generation          int                  `json:"generation"`
	Generations         []Generation         `json:"generations,omitempty"`
	Role                string               `json:"role,omitempty"`
	CreatedBy           string               `json:"createdBy,omitempty"`
	Delegator           string               `json:"delegator,omitempty"`
	DelegationChain     []string             `json:"delegationChain,omitempty"`
	Scopes              []string             `json:"scopes,omitempty"`
	Passthrough         string               `json:"passthrough,omitempty"`
	Secrets             []string             `json:"secrets,omitempty"` // names only, never values
	ParentAgentID       string               `json:"parentAgentId,omitempty"`
	CreatedAt           time.Time            `json:"createdAt"`
	UpdatedAt           time.Time            `json:"updatedAt"`
	// QueuedDispatch is set in the 202 Accepted answer to an action the
	// Hub queued because the agent's runtime broker is offline (a stop):
	// the command waiting for the broker to reconnect.
	QueuedDispatch *QueuedDispatch `json:"queuedDispatch,omitempty"`
}

// QueuedDispatch is a command the Hub holds for an offline runtime broker
// and delivers, once and in order, when the broker reconnects.
type QueuedDispatch struct {
	ID       string    `json:"id"`
	Action   string    `json:"action"` // e.g. "stop"
	Status   string    `json:"status"` // pending, delivered, failed or skipped
	QueuedAt time.Time `json:"queuedAt"`
}

// Generation is one link of an agent's generation chain.
type Generation struct {
	Number    int       `json:"number"`
	BrokerID  string    `json:"runtimeBrokerId,omitempty"`
	RunID     string    `json:"runId,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	Reason    string    `json:"reason,omitempty"`
}

// CreateAgentRequest is the body of POST /agents.
type CreateAgentRequest struct {
	Name    string            `json:"name"`
	Project string            `json:"project"` // name or ID
	Broker  string            `json:"broker,omitempty"`
	Profile string            `json:"profile,omitempty"`
	Harness string            `json:"harness,omitempty"` // default "generic"
	Image   string            `json:"image,omitempty"`
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Ports   []int             `json:"ports,omitempty"` // container ports to publish; see ValidatePorts
	// Role is the agent's role: worker (default) or coordinator, which
	// acts on every agent of its project and only a hub admin (or another
	// coordinator) can hand out.
	Role string `json:"role,omitempty"`
	// Scopes the agent's token carries (default: project:agent:create, so
	// it can start agents of its own; an agent's child gets its parent's).
	// Nil means the default; a pointer to an empty list means none.
	Scopes *[]string `json:"scopes,omitempty"`
	// Passthrough runs the agent with the creating user's cloud identity
	// ("gcp"); only brokers that allow it take such an agent.
	Passthrough string `json:"passthrough,omitempty"`
	// Secrets names Hub secrets (of the project, else hub-wide) delivered
	// to the agent's environment under their names.
	Secrets []string `json:"secrets,omitempty"`
	// Kubernetes are the agent's own Kubernetes settings (namespace,
	// shared_dir_size, safe_to_evict, priority_class, ...); on a Kubernetes
	// runtime they win over the profile's. Other runtimes ignore them.
	Kubernetes map[string]string `json:"kubernetes,omitempty"`
	// Start makes the agent run right away (scion start); otherwise it is
	// only provisioned (scion create).
	Start bool `json:"start"`
	// Payload is free-form harness input (task text, attachments); it may be
	// large (the control channel has no size cliff).
	Payload json.RawMessage `json:"payload,omitempty"`
}

// List is the envelope of every list endpoint. NextCursor is empty on the
// last page; Total is the number of items matching the filter.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
	Total      int    `json:"total"`
}

// AgentDefaults are hub-wide defaults for new agents.
type AgentDefaults struct {
	DefaultRuntimeBroker string `json:"default_runtime_broker,omitempty"`
	DefaultHarness       string `json:"default_harness,omitempty"`
	DefaultImage         string `json:"default_image,omitempty"`
}

// HubSettings is GET/PUT /settings.
type HubSettings struct {
	AgentDefaults AgentDefaults `json:"agent_defaults"`
	// Experiments turns Hub experiments on (see Experiments); a missing
	// name is off.
	Experiments map[string]bool `json:"experiments,omitempty"`
}

// HubSettingsUpdate is the body of PUT /settings: a partial update. A
// field left out keeps its stored value (send "" to clear a default);
// experiments named are turned on or off, the others keep their state.
// With If-Match: "<version>" (the ETag of a GET or PUT) the write happens
// only if nobody wrote the settings since: 412 precondition_failed
// otherwise. A whole HubSettings document is a valid update too.
type HubSettingsUpdate struct {
	AgentDefaults *AgentDefaultsUpdate `json:"agent_defaults,omitempty"`
	Experiments   map[string]bool      `json:"experiments,omitempty"`
}

// AgentDefaultsUpdate is the agent_defaults of a HubSettingsUpdate; nil
// keeps a default, a pointer to "" clears it.
type AgentDefaultsUpdate struct {
	DefaultRuntimeBroker *string `json:"default_runtime_broker,omitempty"`
	DefaultHarness       *string `json:"default_harness,omitempty"`
	DefaultImage         *string `json:"default_image,omitempty"`
}

// Limits is GET/PUT /admin/limits.
type Limits struct {
	MaxAgentsPerBroker int `json:"max_agents_per_broker"`
}

// DefaultMaxAgentsPerBroker is the spec's default for max_agents_per_broker.
const DefaultMaxAgentsPerBroker = 100

// User is a person with a Hub role.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email,omitempty"`
	Role      string    `json:"role"` // admin | member | viewer
	CreatedAt time.Time `json:"createdAt"`
}

// Hub roles.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Whoami is GET /auth/whoami.
type Whoami struct {
	Kind    string `json:"kind"` // user | agent | broker
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Role    string `json:"role,omitempty"`
	Project string `json:"projectId,omitempty"`
}

// LogLine is one line of agent output, streamed by GET /agents/{id}/logs.
type LogLine struct {
	Time   time.Time `json:"time"`
	Stream string    `json:"stream"` // stdout | stderr
	Line   string    `json:"line"`
}

// Health is GET /healthz and /readyz.
type Health struct {
	Status  string            `json:"status"`
	Checks  map[string]string `json:"checks,omitempty"`
	Version string            `json:"version,omitempty"`
}
