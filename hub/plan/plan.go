// Package plan holds the decisions of the Hub's large handlers, as pure
// functions: the handlers (package hub) load, call a plan, commit its
// writes, dispatch its command and answer as it says. Being its own
// package is what keeps a plan pure: it cannot reach the Hub's *Server,
// and the import rules (internal/deptest) allow it only the pure rules
// (hub/authz, hub/lifecycle, hub/placement), the record types (store),
// the broker methods (wire) and hub/storeerr.
//
// A create (POST /agents), a lifecycle action (POST
// /agents/{agent}/{action}), a delete and the reconciliation of a broker's
// inventory are each written in five steps:
//
//  1. load: every read the decision needs, and nothing else: records from
//     the store, the cached Hub settings and limits, which brokers have a
//     session, the authz decisions that need the store (secrets). The load
//     decides nothing, except how far to read (the placement input reads
//     one broker when --broker or the project's default decides).
//  2. plan: a pure function (Create, Action, ActionRun,
//     Delete, Reconcile, ProjectAgentDelete) over plain values: records, settings, the
//     request, the caller (authz.Caller is a plain value; the plans call
//     the pure hub/authz and hub/placement functions). No *Server, no
//     store, no context, no clock, no I/O: IDs and the time are inputs.
//     It decides the refusal (code and status, or an authz refusal the
//     executor logs and answers, see Refusal), the placement, the
//     records, slots and keys to write, the dispatch to send, and the
//     answer. Its table tests need neither a server nor a database
//     (*_test.go here).
//  3. commit: the plan's writes. A create is one transaction
//     (store.CreateAgentWith: the agent, the auto-link, the slot, the
//     Idempotency-Key's record). An action is one transaction too, after
//     every check: the agent record it wants (its delegator, phase
//     stopping) with its slot (store.UpdateAgentWith), or only the slot
//     (store.Reserve) when the record stays as it is.
//  4. dispatch: the command the plan names, to the broker it names.
//  5. answer: what the plan (or, for what only the broker can tell, the
//     outcome functions, the Hub's classifyCreate and Outcome here) says.
//
// Where the coming work slots in:
//
//   - Flat brokers' placement consistency (multi-broker spec, "Inconsistent
//     agent placement"): every operation that reaches a broker for an
//     existing agent runs Reach (plan_reach.go) first, in Action
//     and Delete, and in the streams (logs, exec, attach), the
//     delivery of queued dispatches, the settling of a command cut off by
//     a broker going offline (settleAgent), and before a command is sent
//     again on a broker's new session (checkResend: dispatch's resend of a
//     lost answer, resendStop). For an unpinned agent its rules are
//     today's (no broker: 409 conflict; a broker no longer registered: 409
//     runtime_broker_missing); for a pinned one the spec's
//     (runtime_target_pin_stale, runtime_target_mismatch, a pin naming a
//     deregistered broker), over ReachInput (the agent's pin, its broker's
//     runtime target, which brokers are registered), which the loads fill
//     from the records they read already (loadReach: one more read when
//     the pin names another broker than the assigned one).
//   - Moves: a move is one more plan over the same inputs (the agent, the
//     source and target brokers, the project, the caller), planMove,
//     returning the ordered checks (hub/move) and the saga's steps; its
//     steps reuse the commit and dispatch executors here (reserve on the
//     target, release on the source, the agent's new broker ID written with
//     its generation), each persisted before it runs.
package plan

import "github.com/scion-go/scion/hub/authz"

// Refusal is a plan's authz refusal: the executor turns it into the
// API's answer (403, or notFound's answer for a hidden resource) and logs
// it, through Server.refusal. Plans cannot log.
type Refusal struct {
	Act authz.Action
	Ref *authz.Refusal
}

func (e *Refusal) Error() string { return string(e.Act) + ": " + e.Ref.Reason }

// Refused is ref as a plan's error (nil when there is no refusal).
func Refused(act authz.Action, ref *authz.Refusal) error {
	if ref == nil {
		return nil
	}
	return &Refusal{Act: act, Ref: ref}
}
