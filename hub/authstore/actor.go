package authstore

import (
	"context"
	"errors"

	"github.com/scion-go/scion/hub/authz"
)

// actor is who a store call is made for: the system, or a request's
// caller with what its request has read so far (seen). refused, when set,
// is the error every call with this context gets.
type actor struct {
	system  bool
	caller  authz.Caller
	seen    *seen
	refused error
}

// actorKey is unexported: only this package puts an actor in a context,
// through WithCaller and AsSystem.
type actorKey struct{}

// Errors of a context that carries no usable actor. Both are the Hub's
// own bugs, not the caller's: they answer 500, and the log says which.
var (
	// ErrNoCaller: a store call whose context carries neither a
	// request's caller nor the system. Default deny.
	ErrNoCaller = errors.New("authstore: a store call without a caller: a request's context carries its caller (WithCaller), the Hub's own work runs AsSystem")
	// ErrEscalation: AsSystem was asked of a context that carries a
	// request's caller. System work starts from a context of its own
	// (the Hub's), never from a request's, so that no request can carry
	// the system caller.
	ErrEscalation = errors.New("authstore: AsSystem on a request's context: system work must start from the Hub's own context, not a request's")
)

// WithCaller returns ctx carrying c: every store call made with it is
// decided for c. It is what the Hub's authentication sets for each
// authenticated request. On a context that carried the system it makes
// the calls c's (the narrower wins); each WithCaller starts a new record
// of what the request has read.
func WithCaller(ctx context.Context, c authz.Caller) context.Context {
	return context.WithValue(ctx, actorKey{}, &actor{caller: c, seen: newSeen()})
}

// AsSystem returns ctx carrying the system: every store call made with it
// is allowed. Only the Hub's own work uses it (authentication before
// there is a caller, reconciliation, the delivery of queued dispatches,
// sweeps). On a context that carries a request's caller it does not
// escalate: every store call made with the result fails with
// ErrEscalation.
func AsSystem(ctx context.Context) context.Context {
	if a, ok := ctx.Value(actorKey{}).(*actor); ok && !a.system {
		return context.WithValue(ctx, actorKey{}, &actor{refused: ErrEscalation})
	}
	return context.WithValue(ctx, actorKey{}, &actor{system: true})
}

// actorOf returns ctx's actor, or the error a call with it gets.
func actorOf(ctx context.Context) (*actor, error) {
	a, ok := ctx.Value(actorKey{}).(*actor)
	switch {
	case !ok:
		return nil, ErrNoCaller
	case a.refused != nil:
		return nil, a.refused
	}
	return a, nil
}

// KeyOwner is the owner of caller c's Idempotency-Key records: keys are
// per caller, and a request reaches only its own caller's records.
func KeyOwner(c authz.Caller) string { return string(c.Kind) + ":" + c.ID }
