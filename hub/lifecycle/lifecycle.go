// Package lifecycle is the agent's lifecycle as one table: its phases,
// which of them hold a capacity slot, the phase a runtime state is
// recorded as, and what each action does from each phase (Plan): the
// slot it takes, the phase written before its command, the command sent
// (or the create sent again for an agent its broker holds nothing of)
// and whether it waits in the queue of an offline broker.
//
// It is pure (internal/deptest): plain values in, plain values out. The
// Hub's action path, its reconciliation of a broker's inventory, the
// settling of unanswered commands and the offline queue consult it, so
// that a phase means the same everywhere; the coming move saga adds its
// steps here.
package lifecycle

import "github.com/scion-go/scion/api"

// Phases are every phase an agent record takes, in the order of a life.
var Phases = []string{api.PhaseCreated, api.PhaseProvisioning, api.PhaseRunning, api.PhaseStopping,
	api.PhaseStopped, api.PhaseSuspended, api.PhaseError, api.PhaseDeleting}

// Command is what an action sends to the agent's broker.
type Command string

// The commands, one per action, and the create an action sends instead
// when the broker holds nothing of the agent.
const (
	CmdStart   Command = "start"
	CmdRestart Command = "restart"
	CmdResume  Command = "resume"
	CmdStop    Command = "stop"
	CmdSuspend Command = "suspend"
	CmdCreate  Command = "create"
)

// Action is one lifecycle verb of POST /agents/{agent}/{action}.
type Action struct {
	Verb    string
	Command Command
	// Running: the agent runs afterwards, so the action takes (or keeps)
	// its capacity slot, and it runs under the role it has, which the
	// caller must be able to delegate.
	Running bool
}

// Actions are the verbs, in api.AgentActions' order.
var Actions = []Action{
	{"start", CmdStart, true},
	{"stop", CmdStop, false},
	{"restart", CmdRestart, true},
	{"suspend", CmdSuspend, false},
	{"resume", CmdResume, true},
}

// HoldsSlot reports whether an agent in phase counts against its
// broker's running-agent cap: it runs, is on its way to, or is being
// stopped (its process may still run).
func HoldsSlot(phase string) bool {
	return phase == api.PhaseRunning || phase == api.PhaseProvisioning || phase == api.PhaseStopping
}

// KeepsSlot is HoldsSlot, or a stop queued for an offline broker, which
// keeps the slot the agent had until the stop's answer or an inventory
// shows the container stopped or gone.
func KeepsSlot(phase, container string) bool {
	return HoldsSlot(phase) || container == api.ContainerStopQueued
}

// NoContainer reports whether the Hub knows that the broker holds nothing
// of an agent in phase with container status container: its create was
// refused (the broker undoes a failed one), or an inventory showed it
// missing, and nothing has run since. Such an agent is only a record of
// why it failed: a create with its name replaces it, and a running
// action creates it again.
func NoContainer(phase, container string) bool {
	return phase == api.PhaseError && (container == api.ContainerNone || container == api.ContainerMissing)
}

// PhaseFor is the phase a runtime state is recorded as; wantRunning: the
// command that led to it asked for the agent to run (a created container
// is then on its way).
func PhaseFor(state string, wantRunning bool) string {
	switch state {
	case api.ContainerRunning:
		return api.PhaseRunning
	case api.ContainerPaused:
		return api.PhaseSuspended
	case api.ContainerPending:
		// Started, on its way; the message says what it waits for (the
		// scheduler's or the kubelet's reason).
		return api.PhaseProvisioning
	case api.ContainerCreated:
		if wantRunning {
			return api.PhaseProvisioning
		}
		return api.PhaseCreated
	case api.ContainerExited:
		return api.PhaseStopped
	case api.ContainerMissing:
		return api.PhaseError
	}
	return api.PhaseCreated
}

// Plan is what an action does to an agent, decided on the record as the
// broker's queue left it.
type Plan struct {
	// Reserve: take the agent's slot on its broker, under its cap
	// (checked again at every start, restart and resume; a refused one
	// sends nothing).
	Reserve bool
	// Before is the phase written before the command ("" keeps it): a
	// running agent is stopping while its stop runs, so that the exit the
	// stop causes is not taken for a crash when the broker reports it.
	Before string
	// Send is the command: the action's, or CmdCreate when the broker
	// holds nothing of the agent and the action asks for it running.
	Send Command
	// MintToken: the command carries a fresh agent token (the agent runs
	// again).
	MintToken bool
	// QueueIfOffline: a stop, the one action queued for an offline broker
	// (202, delivered when it reconnects); every other is refused.
	QueueIfOffline bool
}

// PlanAction is the table: what act does to an agent in phase with
// container status container.
func PlanAction(act Action, phase, container string) Plan {
	p := Plan{Reserve: act.Running, Send: act.Command, MintToken: act.Running, QueueIfOffline: act.Command == CmdStop}
	if act.Running && NoContainer(phase, container) {
		p.Send = CmdCreate
	}
	if act.Command == CmdStop && phase == api.PhaseRunning {
		p.Before = api.PhaseStopping
	}
	return p
}

// State is an agent's phase with its container status.
type State struct{ Phase, Container string }

// The records of the offline queue: a stop queued for an offline broker
// shows the agent stopped with its stop queued (it keeps its slot:
// KeepsSlot) until the broker is back; a queued stop the broker could
// not carry out leaves it in error, its container's state unknown until
// the next inventory.
var (
	QueuedStop       = State{Phase: api.PhaseStopped, Container: api.ContainerStopQueued}
	QueuedStopFailed = State{Phase: api.PhaseError, Container: api.ContainerNone}
)
