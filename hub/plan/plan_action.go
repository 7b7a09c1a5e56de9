// The plans of POST /agents/{agent}/{action} and DELETE /agents/{agent}:
// what a lifecycle action or a delete decides, as pure functions of what
// its load read (see plan.go).
//
// An action is planned in two steps, because a broker that has just come
// back first receives what was queued for it while it was offline, and
// the action must decide its writes (the slot, phase stopping) on the
// agent as that left it:
//
//   - Action, on the agent as loaded: the refusals (the caller's
//     Idempotency-Key, no broker, the authority to run it again,
//     Reach, the broker's passthrough), the dispatch key, and what an
//     offline broker gets (a stop is queued, the rest refused).
//   - ActionRun, on the agent read again once the broker's session is
//     ready: the writes (the delegator, the slot, phase stopping), whether
//     the agent is created again (its broker holds nothing of it), and the
//     command.
//
// What happens after the command is what the broker answered:
// actionOutcome decides what is recorded and answered.

package plan

import (
	"cmp"
	"errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// action is one lifecycle verb (lifecycle.Actions, the table) with the
// broker method of its command.
type action struct {
	lifecycle.Action
	method string
}

// commandMethods are the broker methods of the table's commands.
var commandMethods = map[lifecycle.Command]string{
	lifecycle.CmdStart: wire.MethodAgentStart, lifecycle.CmdRestart: wire.MethodAgentRestart,
	lifecycle.CmdResume: wire.MethodAgentResume, lifecycle.CmdStop: wire.MethodAgentStop,
	lifecycle.CmdSuspend: wire.MethodAgentSuspend, lifecycle.CmdCreate: wire.MethodAgentCreate,
}

// actions are the table's actions by verb.
var actions = func() map[string]action {
	m := map[string]action{}
	for _, a := range lifecycle.Actions {
		m[a.Verb] = action{Action: a, method: commandMethods[a.Command]}
	}
	return m
}()

// ActionFor is the action a verb names.
func ActionFor(verb string) (action, error) {
	if err := api.CheckAgentAction(verb); err != nil {
		return action{}, err
	}
	return actions[verb], nil
}

// ActionInput is what a lifecycle action decides on, as its first load
// read it.
type ActionInput struct {
	Verb   string
	Caller authz.Caller
	// Agent is the agent as loaded (the caller may act on it).
	Agent *store.Agent
	// Broker is the agent's broker (nil: none, or no longer registered,
	// which BrokerMissing says).
	Broker        *store.Broker
	BrokerMissing bool
	// PinnedMissing: the broker a pinned agent's pin names is no longer
	// registered (ReachInput).
	PinnedMissing bool
	// KeyHeader is the caller's Idempotency-Key; FreshKey a new unique
	// key suffix for a command without one.
	KeyHeader, FreshKey string
}

// ActionPlan is an action decided on the agent as first loaded.
type ActionPlan struct {
	Verb   string
	Action action
	// Key is the dispatch key: the caller's Idempotency-Key (ClientKey:
	// scoped to the caller, the action and the agent) when given, so a
	// retried request is carried out once; else a fresh one.
	Key, ClientKey string
	// Delegator, when Redelegate is set, is the agent's delegator to
	// record: a user running again an agent with no recorded provenance
	// becomes it.
	Redelegate bool
	Delegator  string
	// QueueIfOffline: a stop, the one action the spec queues for an
	// offline broker (202, delivered when the broker reconnects); the
	// executor decides under the broker's queue lock whether it is.
	QueueIfOffline bool
	// Offline is the answer when the broker has no session.
	Offline error
}

// reach is what Reach decides on, from in.
func (in ActionInput) reach() ReachInput {
	return ReachInput{Agent: in.Agent, Broker: in.Broker, BrokerMissing: in.BrokerMissing, PinnedMissing: in.PinnedMissing}
}

// Action decides an action on the agent as first loaded, refusing in
// this order: an unknown verb, an Idempotency-Key too long, an agent with
// no broker (a pinned one: Reach's runtime_target_pin_stale), the
// authority to run it again (start, restart, resume), Reach, the
// broker's passthrough.
func Action(in ActionInput) (ActionPlan, error) {
	act, err := ActionFor(in.Verb)
	if err != nil {
		return ActionPlan{}, err
	}
	a, c := in.Agent, in.Caller
	if err := api.CheckIdempotencyKey(in.KeyHeader); err != nil {
		return ActionPlan{}, err
	}
	if a.BrokerID == "" && a.Pin == nil {
		return ActionPlan{}, Reach(in.reach())
	}
	p := ActionPlan{Verb: in.Verb, Action: act}
	if act.Running {
		// Acting on another agent runs it again under its role, so the
		// caller must be able to delegate that role.
		if !(c.Kind == authz.Agent && c.ID == a.ID) {
			if err := Refused(authz.AgentLifecycle, authz.CanDelegate(c, a.Role)); err != nil {
				return ActionPlan{}, err
			}
		}
		if d := authz.Redelegate(c, a.Delegator, false); d != a.Delegator {
			p.Redelegate, p.Delegator = true, d
		}
	}
	if err := Reach(in.reach()); err != nil {
		return ActionPlan{}, err
	}
	b := in.Broker
	if act.Running {
		// Placing it again: the broker must still allow its passthrough
		// identity (the broker may have stopped offering it).
		if err := Refused(authz.BrokerDispatch, authz.PassthroughAllowed(a.Passthrough, b.Capabilities)); err != nil {
			return ActionPlan{}, err
		}
	}
	// The broker answers a key it has seen from its record: without the
	// agent in it, the same key on another agent would get the first
	// agent's state recorded as its own.
	if in.KeyHeader != "" {
		p.ClientKey = in.Verb + ":" + a.ID + ":" + c.Principal() + ":" + in.KeyHeader
	}
	p.Key = cmp.Or(p.ClientKey, in.Verb+":"+in.FreshKey)
	p.QueueIfOffline = lifecycle.PlanAction(act.Action, a.Phase, a.ContainerStatus).QueueIfOffline
	p.Offline = api.Errorf(api.CodeBrokerOffline,
		"runtime broker %q is offline; try again when it reconnects", b.Name).WithDetail("broker", b.Name)
	return p, nil
}

// RunInput is what the second step of an action decides on: the agent as
// the broker's queue left it.
type RunInput struct {
	Plan   ActionPlan
	Agent  *store.Agent
	Broker *store.Broker
	// Limit is the broker's running-agent cap (read for running actions).
	Limit int
	// RecreateErr is the refusal of creating again an agent its broker
	// holds nothing of (NeedsRecreate): the caller may not hand over its
	// secrets (prepareRecreate decides it in the load).
	RecreateErr error
}

// RunPlan is the second step of an action decided: its writes, then its
// command.
type RunPlan struct {
	// Reserve: take the agent's slot on the broker, under Limit.
	Reserve bool
	Limit   int
	// MarkStopping: phase stopping before a stop is sent, so the exit the
	// stop causes is not taken for a crash when the broker reports it.
	MarkStopping bool
	// Recreate: the broker holds nothing of the agent; its create is sent
	// again (with start) instead of the action.
	Recreate bool
	// Method and Ref are the command; MintToken: it carries a fresh agent
	// token (the agent runs again).
	Method    string
	Ref       wire.AgentRef
	MintToken bool
	Key       string
	broker    *store.Broker
}

// NeedsRecreate reports whether running action act on agent a is creating
// it again: its create was refused or never reached the broker, so there
// is no container to start, restart or resume, and what the caller asks
// for is the agent running (the broker would answer agent_not_found).
func NeedsRecreate(act action, a *store.Agent) bool {
	return lifecycle.PlanAction(act.Action, a.Phase, a.ContainerStatus).Send == lifecycle.CmdCreate
}

// ActionRun decides the writes and the command of an action planned
// by Action, on the agent as read again.
func ActionRun(in RunInput) (RunPlan, error) {
	act, a := in.Plan.Action, in.Agent
	if NeedsRecreate(act, a) && in.RecreateErr != nil {
		// Decided before a slot is taken: a refused one takes none.
		return RunPlan{}, in.RecreateErr
	}
	step := lifecycle.PlanAction(act.Action, a.Phase, a.ContainerStatus)
	return RunPlan{
		// Checked again at start, resume and restart. A refused restart
		// leaves the running container alone: nothing is dispatched.
		Reserve:      step.Reserve,
		Limit:        in.Limit,
		MarkStopping: step.Before == api.PhaseStopping,
		Recreate:     step.Send == lifecycle.CmdCreate,
		Method:       act.method, // a recreate sends its create instead (runAction)
		Ref:          wire.AgentRef{AgentID: a.ID, RunID: a.RunID, Pin: a.Pin},
		MintToken:    step.MintToken,
		Key:          in.Plan.Key,
		broker:       in.Broker,
	}, nil
}

// ActionRecord is the agent record an action writes, from a as stored:
// the caller as its delegator when the plan re-delegates, phase stopping
// for a running agent it stops; changed is false (and next nil) when that
// is a as it is.
func ActionRecord(plan ActionPlan, run RunPlan, a *store.Agent) (next *store.Agent, changed bool) {
	n := *a
	if plan.Redelegate && n.Delegator != plan.Delegator {
		n.Delegator, changed = plan.Delegator, true
	}
	if run.MarkStopping && n.Phase == api.PhaseRunning {
		n.Phase, changed = api.PhaseStopping, true
	}
	if !changed {
		return nil, false
	}
	return &n, true
}

// ReserveErr is the answer to agent a's slot the store refused with err.
func (p RunPlan) ReserveErr(a *store.Agent, err error) error {
	if errors.Is(err, store.ErrQuota) {
		return QuotaError(p.broker, p.Limit)
	}
	if errors.Is(err, store.ErrReservationScope) {
		return ReservationScopeError(a, p.broker)
	}
	return err
}

// actionOutcome is what an action's command left, as its error says.
type actionOutcome struct {
	// Unknown: the broker went offline with the command unanswered;
	// whether it acted is unknown until it is back: the record stays as
	// the command found it (with the slot just taken), and the broker's
	// inventory at its reconnect settles phase and slot (settleLater when
	// the reconnect passed the agent by).
	Unknown bool
	// Failed: a stop or a suspend the broker did not carry out: the agent
	// is left as it was (a stop's phase stopping set back to running) and
	// the error answered.
	Failed bool
	// Requeue: a stop that went unanswered because its broker went away:
	// queued under the same key (202), so that it is delivered, and
	// carried out once, when the broker is back; sent again on the new
	// session when the broker is back already.
	Requeue bool
	// Record: the broker's answer (its status, or its refusal: then phase
	// error) is recorded and answered.
	Record bool
}

// Outcome decides what action act's command answered with derr leaves.
func Outcome(act action, derr error) actionOutcome {
	o := actionOutcome{Unknown: WentOffline(derr)}
	switch {
	case derr != nil && !act.Running:
		o.Failed = true
		o.Requeue = act.method == wire.MethodAgentStop && (LostReply(derr) || api.IsCode(derr, api.CodeBrokerOffline))
	case !o.Unknown:
		o.Record = true
	}
	return o
}

// DeleteInput is what a delete decides on.
type DeleteInput struct {
	Caller authz.Caller
	Agent  *store.Agent
	Force  bool
	// Online: the agent's broker has a session. BrokerMissing (read only
	// when it has none, or the agent is pinned): the broker is no longer
	// registered.
	Online        bool
	BrokerMissing bool
	// Broker and PinnedMissing are read for a pinned agent (ReachInput).
	Broker        *store.Broker
	PinnedMissing bool
}

// deletePlan is a delete decided: the broker's delete first (Dispatch,
// under Key; agent_not_found is fine), then the record.
type deletePlan struct {
	Dispatch bool
	Key      string
	// Forced: the record goes without reaching the broker, which is gone
	// for good (logged: its workload may still run).
	Forced bool
}

// Delete decides a delete. Removing the record without reaching the
// broker could leave a workload running with its capacity released: only
// for a broker that is gone for good (Reach), and only when forced.
// A pinned agent whose placement is inconsistent is refused with or
// without force (Reach), its record and slot left as they are: its
// workload may run on a broker the Hub can no longer tell.
func Delete(in DeleteInput) (deletePlan, error) {
	a := in.Agent
	reach := ReachInput{Agent: a, Broker: in.Broker, BrokerMissing: in.BrokerMissing, PinnedMissing: in.PinnedMissing}
	if a.Pin != nil {
		if err := Reach(reach); err != nil {
			return deletePlan{}, err
		}
	}
	if a.BrokerID == "" {
		return deletePlan{}, nil
	}
	if in.Online {
		return deletePlan{Dispatch: true, Key: "delete:" + a.ID}, nil
	}
	err := Reach(reach)
	if err == nil {
		err = api.Errorf(api.CodeBrokerOffline,
			"the agent's runtime broker is offline; delete it when the broker reconnects")
	}
	if !in.Force || !api.IsCode(err, api.CodeBrokerMissing) {
		return deletePlan{}, err
	}
	return deletePlan{Forced: true}, nil
}
