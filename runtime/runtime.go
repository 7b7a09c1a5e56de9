// Package runtime defines the Runtime interface a Runtime Broker drives to
// run agent containers, and the labels every runtime puts on what it
// creates. Implementations live in sub-packages: fake (in memory, for logic
// tests), process (an unsandboxed local process per agent), and later docker
// and kubernetes. runtimetest holds the conformance suite all of them pass.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Labels every runtime attaches to an agent's container (or process
// record), so inventory can find them after a broker restart.
const (
	LabelAgentID   = "scion.agent_id"
	LabelRunID     = "scion.run_id"
	LabelBrokerID  = "scion.broker_id"
	LabelProjectID = "scion.project_id"
	LabelSlug      = "scion.slug"
	// LabelProfile and LabelSharingMode carry the agent's broker profile
	// and its project's sharing mode, for runtimes that cannot see the
	// broker's disk (Kubernetes picks a cluster and lays out volumes by
	// them).
	LabelProfile     = "scion.profile"
	LabelSharingMode = "scion.sharing_mode"
	// LabelKubernetesSetting prefixes an agent's own Kubernetes settings
	// (scion.k8s.namespace, ...), which win over its profile's.
	LabelKubernetesSetting = "scion.k8s."
	// LabelPersistentHome ("true"): the agent's home, where the runtime
	// keeps homes on an NFS share, is at a place of its own on the share,
	// the same for every broker of it (wire.AgentSpec.PersistentHome).
	LabelPersistentHome = "scion.persistent_home"
)

// States of a container, as Status.State. They match the api.Container*
// values.
const (
	StateCreated = "created"
	// StatePending is a container the runtime was asked to start and is
	// bringing up, not running yet: a Kubernetes pod waiting for a node,
	// for its image, or that its container cannot be made. Message says
	// why; a runtime reports running by an event when it runs.
	StatePending = "pending"
	StateRunning = "running"
	StateExited  = "exited"
	StatePaused  = "paused"
	StateMissing = "missing"
)

// ErrNotFound is returned (wrapped) for an agent the runtime has no
// container for.
var ErrNotFound = errors.New("agent container not found")

// ErrHostPortTaken is wrapped by a Start that failed because a host port
// the agent publishes is already in use on the host.
var ErrHostPortTaken = errors.New("a published host port is already in use on the host")

// HostPortTakenError is a runtime's ErrHostPortTaken that names the port
// the engine refused, so the broker can keep it out of the next try even
// when nothing it can see holds it (a container not started yet).
type HostPortTakenError struct {
	Port int // 0 when the engine's message names none
}

func (e *HostPortTakenError) Error() string {
	if e.Port == 0 {
		return ErrHostPortTaken.Error()
	}
	return fmt.Sprintf("host port %d is already in use on the host", e.Port)
}

// Is makes a HostPortTakenError an ErrHostPortTaken.
func (e *HostPortTakenError) Is(target error) bool { return target == ErrHostPortTaken }

// HostPortLister is a runtime whose engine publishes agents' ports on a
// host it shares with other clients: another broker, or anything else
// run on the same Docker Engine. ForeignHostPorts returns the host ports
// the engine's containers that are not this broker's agents publish now
// or will when started again (a stopped agent of another broker keeps its
// port: taking it would fail that agent's next start). The broker's pool
// passes them over, so two brokers on one host with overlapping port
// ranges do not hand out the same port.
type HostPortLister interface {
	ForeignHostPorts(ctx context.Context) ([]int, error)
}

// Spec describes one agent container.
type Spec struct {
	AgentID   string
	RunID     string
	BrokerID  string
	ProjectID string
	Slug      string
	Image     string
	Command   []string
	Env       map[string]string
	// WorkDir is the agent's workspace on the broker host.
	WorkDir string
	// HomeDir is the agent's broker-local home.
	HomeDir string
	// Mounts are further host directories the agent needs at a fixed path,
	// such as the git directory a worktree workspace points into (which
	// must appear at the same absolute path as on the host). Runtimes that
	// run agents on the host itself (process) need not do anything.
	Mounts []Mount
	// GitDir is, for a worktree workspace, the worktree's own git
	// directory (what WorkDir/.git names), inside one of Mounts: a runtime
	// that shows that mount at another path than its host one must point
	// the workspace's .git there (Kubernetes: a fixed path in the pod).
	GitDir string
	Labels map[string]string
	// SecretEnv names the Env entries that are secrets (Hub secrets named
	// at create, the agent token). A runtime that can keep them out of
	// what readers of its objects see does (Kubernetes: a Secret, not the
	// pod spec); the others treat them as any Env entry.
	SecretEnv []string
}

// AgentTokenSetter is a runtime that delivers the agent token itself,
// with no broker-local home to write $HOME/.scion/agent-token into: the
// broker hands it the fresh token of a start, restart or resume before
// the start, and the agent that starts gets that token.
type AgentTokenSetter interface {
	SetAgentToken(ctx context.Context, agentID, token string) error
}

// SpecChecker is a runtime that can refuse a spec's settings (its
// labels) before the broker makes anything for the agent: its
// directories, its workspace (a clone). The broker calls it first; the
// runtime's Create checks the same again.
type SpecChecker interface {
	CheckSpec(spec Spec) error
}

// Mount is one extra host directory for an agent.
type Mount struct {
	Source   string
	Target   string
	ReadOnly bool
}

// Status is a runtime's view of one agent container.
type Status struct {
	AgentID    string
	RunID      string
	State      string
	ExitCode   *int
	StartedAt  time.Time
	FinishedAt time.Time
	Message    string
	Labels     map[string]string
}

// Event is a state change the runtime observed on its own (an agent
// process exiting, say).
type Event struct {
	Status Status
}

// ProjectCleaner is a runtime that keeps resources of a project's own,
// shared by its agents and outliving each of them (the Kubernetes
// runtime's project claims). CleanupProject removes them once the project
// is deleted and names what it removed; what is already gone is not an
// error. The caller makes sure the project has no agents left.
type ProjectCleaner interface {
	CleanupProject(ctx context.Context, projectID string) (removed []string, err error)
}

// Runtime runs agent containers on one broker.
//
// All methods are safe for concurrent use. Create must not start the
// container; Start on a running container is a no-op; Stop on a stopped
// one is a no-op; Delete of an unknown agent returns ErrNotFound.
type Runtime interface {
	// Name is the runtime's kind: "fake", "process", "docker", ...
	Name() string
	Create(ctx context.Context, spec Spec) (Status, error)
	// Start starts the container and answers running, or pending when
	// the runtime brings it up asynchronously (a pod to schedule); a
	// pending container's running is reported by an event.
	Start(ctx context.Context, agentID string) (Status, error)
	// Stop asks the container to exit and kills it after grace.
	Stop(ctx context.Context, agentID string, grace time.Duration) (Status, error)
	Suspend(ctx context.Context, agentID string) (Status, error)
	Resume(ctx context.Context, agentID string) (Status, error)
	Delete(ctx context.Context, agentID string) error
	Inspect(ctx context.Context, agentID string) (Status, error)
	// Logs returns the container's combined output. With follow the reader
	// stays open until the container exits or ctx ends.
	Logs(ctx context.Context, agentID string, follow bool) (io.ReadCloser, error)
	// Inventory lists every container carrying our labels.
	Inventory(ctx context.Context) ([]Status, error)
	// Events delivers state changes the runtime noticed by itself. It may
	// return nil if the runtime does not report events.
	Events() <-chan Event
	Close() error
}
