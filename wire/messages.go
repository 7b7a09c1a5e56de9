package wire

import (
	"encoding/json"
	"time"

	"github.com/scion-go/scion/api"
)

// ProtocolVersion is the control-channel protocol version a peer speaks.
// 2: the upgrade is signed with SignatureVersion 2 (query string and body
// hash covered, nonces kept by the Hub across restarts).
const ProtocolVersion = 2

// Capabilities a broker may advertise in its hello.
const (
	CapLogsFollow        = "logs-follow"
	CapAgentMove         = "agent-move"
	CapAgentMoveRecreate = "agentMoveRecreate"
	CapExec              = "exec"
	CapAttach            = "attach"
	// CapProjectCleanup: the broker's runtime keeps resources of a
	// project's own (Kubernetes project claims) and removes them on
	// project.cleanup.
	CapProjectCleanup = "project-cleanup"
)

// Methods, Hub to broker.
const (
	MethodAgentCreate  = "agent.create"
	MethodAgentStart   = "agent.start"
	MethodAgentStop    = "agent.stop"
	MethodAgentRestart = "agent.restart"
	MethodAgentSuspend = "agent.suspend"
	MethodAgentResume  = "agent.resume"
	MethodAgentDelete  = "agent.delete"
	// MethodAgentCleanup (AgentRef -> AgentStatus) removes a moved
	// agent's local copy from the broker it left: the container of the
	// named run only (never another run's, which may be the agent's new
	// one on a shared namespace), its broker-local directory and home;
	// never the export. RunID is required.
	MethodAgentCleanup = "agent.cleanup"
	MethodAgentInspect = "agent.inspect"
	MethodAgentLogs    = "agent.logs" // stream of LogChunk
	MethodInventory    = "broker.inventory"
	MethodEcho         = "echo" // diagnostics and benchmarks
	// MethodProjectCleanup (ProjectRef -> ProjectCleanup) removes what the
	// broker's runtime keeps for a project the Hub has deleted.
	MethodProjectCleanup = "project.cleanup"
)

// ProjectRef names a project in project.cleanup.
type ProjectRef struct {
	ProjectID string `json:"projectId"`
}

// ProjectCleanup is project.cleanup's answer: what the broker removed
// (runtime resource names, "namespace/claim" on Kubernetes).
type ProjectCleanup struct {
	Removed []string `json:"removed"`
}

// Methods, broker to Hub.
const (
	MethodHello        = "hello"
	MethodAgentStatus  = "agent.status" // a broker-observed status change
	MethodInventorySet = "inventory.report"
)

// Hello is the first request a broker sends after the WebSocket opens.
type Hello struct {
	ProtocolVersion int       `json:"protocolVersion"`
	BrokerID        string    `json:"brokerId"`
	Name            string    `json:"name"`
	Version         string    `json:"version"`
	Runtime         string    `json:"runtime"`
	Capabilities    []string  `json:"capabilities"`
	Profiles        []Profile `json:"profiles,omitempty"`
	// RuntimeTarget is a flat Runtime Broker instance's one target
	// (resolved: a Kubernetes context and namespace are filled in); such
	// a broker sends no profiles.
	RuntimeTarget *api.RuntimeTarget `json:"runtimeTarget,omitempty"`
	Inventory     []AgentStatus      `json:"inventory"`
	Labels        map[string]string  `json:"labels,omitempty"`
	// WorkspaceStorage says where the broker keeps agent workspaces
	// ("local", or "nfs" with the share's server, export and subpath_root).
	WorkspaceStorage *WorkspaceStorage `json:"workspaceStorage,omitempty"`
}

// WorkspaceStorage is a broker's workspace storage (api.WorkspaceStorage).
type WorkspaceStorage = api.WorkspaceStorage

// Profile is a Runtime Broker Profile as the broker advertises it.
type Profile struct {
	Name     string            `json:"name"`
	Runtime  string            `json:"runtime"`
	Default  bool              `json:"default,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
}

// HelloReply is the Hub's answer to Hello.
type HelloReply struct {
	ProtocolVersion int       `json:"protocolVersion"`
	HubVersion      string    `json:"hubVersion"`
	SessionID       string    `json:"sessionId"`
	ServerTime      time.Time `json:"serverTime"`
	// HeartbeatInterval is how often the broker should ping; the Hub marks
	// the broker offline after HeartbeatInterval+Grace of silence.
	HeartbeatIntervalMS int64 `json:"heartbeatIntervalMs"`
}

// AgentSpec is everything a broker needs to provision an agent.
type AgentSpec struct {
	AgentID     string            `json:"agentId"`
	Slug        string            `json:"slug"`
	ProjectID   string            `json:"projectId"`
	ProjectName string            `json:"projectName"`
	RunID       string            `json:"runId"`
	Generation  int               `json:"generation"`
	Harness     string            `json:"harness"`
	Image       string            `json:"image,omitempty"`
	Command     []string          `json:"command,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Ports       []int             `json:"ports,omitempty"` // container ports to publish from the broker's port pool
	Profile     string            `json:"profile,omitempty"`
	// Pin is the agent's pinned runtime target when it runs on a flat
	// broker: the broker refuses (409 runtime_target_mismatch) a spec
	// whose pin names another broker or target than its own.
	Pin         *api.PinnedRuntimeTarget `json:"pinnedRuntimeTarget,omitempty"`
	SharingMode string                   `json:"sharingMode,omitempty"`
	GitRemote   string                   `json:"gitRemote,omitempty"`
	AgentToken  string                   `json:"agentToken,omitempty"`
	// Secrets are the values of the Hub secrets the agent names, by name;
	// the broker puts them in the agent's environment and nowhere else.
	Secrets map[string]string `json:"secrets,omitempty"`
	// Kubernetes are the agent's own Kubernetes settings; the broker hands
	// them to its runtime as scion.k8s.<key> spec labels.
	Kubernetes map[string]string `json:"kubernetes,omitempty"`
	HubURL     string            `json:"hubUrl,omitempty"`
	// Moved provisions an agent moved here from another broker: its
	// workspace is already on the export, so the broker confirms it
	// through its own mount and refuses if it is not there; it never
	// makes (clones) one.
	Moved bool `json:"moved,omitempty"`
	// ConfirmWorkspace: the agent's workspace is on the export already
	// (its placement says so), though this broker may hold no record of
	// it: confirmed there, as a moved agent's is, never made anew. A
	// create sent again, a reincarnation in place; unlike Moved, the
	// agent's home here, if any, is its own and kept.
	ConfirmWorkspace bool `json:"confirmWorkspace,omitempty"`
	// Reincarnate makes the agent's next generation on this broker (a
	// reincarnation in place): its container, whatever run it holds, is
	// removed and its home rebuilt from the harness; its workspace is
	// kept (KeepWorkspace).
	Reincarnate bool `json:"reincarnate,omitempty"`
	// KeepWorkspace: the agent's recorded workspace, if the broker has
	// one, is its workspace as it is; only an agent with none gets a
	// fresh one. A create sent again for an agent that ran before.
	KeepWorkspace bool `json:"keepWorkspace,omitempty"`
	// PersistentHome: the hub.k8s_nfs_home experiment is on. A runtime
	// that keeps homes on an NFS share (Kubernetes, home_storage nfs)
	// keeps this agent's at a place of its own on the share
	// (homes/<agentID>), the same for every broker of the share: an agent
	// moved to one of them finds its home there; elsewhere it starts with
	// a fresh local home, the old one left untouched.
	PersistentHome bool `json:"persistentHome,omitempty"`
	// Handoff is the new generation's preamble and handoff of a
	// reincarnation: the broker writes it into the agent's home
	// (HandoffFile) before the agent starts.
	Handoff string `json:"handoff,omitempty"`
	// GlobalProject: the agent is in the Hub's global project (the
	// project of agent commands that name none, api.GlobalProject),
	// which a broker serving more than one Hub refuses (409
	// global_project_disabled).
	GlobalProject bool            `json:"globalProject,omitempty"`
	Start         bool            `json:"start"`
	Payload       json.RawMessage `json:"payload,omitempty"`
}

// AgentRef names an agent (and optionally its run) in a lifecycle command.
type AgentRef struct {
	AgentID string `json:"agentId"`
	RunID   string `json:"runId,omitempty"`
	// GraceMS is the stop grace period; 0 means the broker default.
	GraceMS int64 `json:"graceMs,omitempty"`
	// AgentToken is a fresh agent token, sent with start, restart and
	// resume: the broker writes it where the agent's CLI reads it (the
	// container's environment still holds the token of its create).
	AgentToken string `json:"agentToken,omitempty"`
	// Pin is the agent's pinned runtime target (see AgentSpec.Pin).
	Pin *api.PinnedRuntimeTarget `json:"pinnedRuntimeTarget,omitempty"`
}

// AgentStatus is a broker's view of one agent container.
type AgentStatus struct {
	AgentID   string            `json:"agentId"`
	RunID     string            `json:"runId,omitempty"`
	ProjectID string            `json:"projectId,omitempty"`
	State     string            `json:"state"` // api.Container* values
	ExitCode  *int              `json:"exitCode,omitempty"`
	Message   string            `json:"message,omitempty"`
	StartedAt *time.Time        `json:"startedAt,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Ports are the host ports the container holds from the broker's port
	// pool; empty when it holds none (stopped, missing).
	Ports []api.PortMapping `json:"ports,omitempty"`
	// ObservedAt orders the statuses of one agent: the broker stamps it
	// (strictly increasing, broker clock, unix ns) while it holds the
	// agent's lock, so a late event can never overwrite a newer answer.
	ObservedAt int64 `json:"observedAt,omitempty"`
	// WorkspacePlacement is where the broker recorded the agent's
	// workspace when it last started it ("export" or "local"; empty
	// when it has not recorded it).
	WorkspacePlacement string `json:"workspacePlacement,omitempty"`
}

// LogsRequest asks for an agent's output.
type LogsRequest struct {
	AgentID string `json:"agentId"`
	Follow  bool   `json:"follow"`
	Tail    int    `json:"tail,omitempty"`
}

// LogChunk is one stream item of agent.logs.
type LogChunk struct {
	Stream string `json:"stream"` // stdout | stderr
	Data   string `json:"data"`
}

// Inventory is the broker's full list of agent containers.
type Inventory struct {
	Agents []AgentStatus `json:"agents"`
}

// Echo is the body of the echo method.
type Echo struct {
	Data []byte `json:"data"`
}

// Exec and attach (Hub to broker).
const (
	MethodAgentExec        = "agent.exec"         // stream of ExecOutput
	MethodAgentAttach      = "agent.attach"       // stream of AttachOutput
	MethodAgentAttachInput = "agent.attach.input" // AttachInput -> {}
)

// ExecRequest runs a command in a running agent. Stdin, when given, is the
// command's whole standard input (bounded by the request size).
type ExecRequest struct {
	AgentID string            `json:"agentId"`
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	TTY     bool              `json:"tty,omitempty"`
	Stdin   []byte            `json:"stdin,omitempty"`
}

// ExecOutput is one item of an exec stream: output on a stream, or, last,
// the exit code (Stream "exit").
type ExecOutput struct {
	Stream   string `json:"stream"` // stdout | stderr | exit
	Data     []byte `json:"data,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
}

// AttachRequest opens an attachment; input for it arrives as
// agent.attach.input calls naming the same session.
type AttachRequest struct {
	AgentID   string `json:"agentId"`
	SessionID string `json:"sessionId"`
}

// AttachOutput is one item of an attach stream.
type AttachOutput struct {
	Data []byte `json:"data"`
}

// AttachInput sends bytes to an attachment, or closes its input, or
// resizes its terminal.
type AttachInput struct {
	SessionID  string `json:"sessionId"`
	Data       []byte `json:"data,omitempty"`
	CloseWrite bool   `json:"closeWrite,omitempty"`
	Rows       uint16 `json:"rows,omitempty"`
	Cols       uint16 `json:"cols,omitempty"`
}
