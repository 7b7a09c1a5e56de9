// Package authstore is the Hub's store with authorization in its path: a
// store.Store that wraps another and decides every call for the caller
// the context carries, so a handler that forgets to ask hub/authz still
// cannot read or change what its caller may not.
//
// What it holds:
//
//   - the actor of a call, carried in the context (actor.go): a request's
//     caller (WithCaller, set by the Hub's authentication for every
//     authenticated request) or the system (AsSystem: the Hub's own work,
//     from reconciliation to authentication itself). A context with
//     neither is refused: default deny;
//   - the policy (policy.go): one pure function, Decide, from a store
//     method, the caller and the records it names to allow, not found or
//     forbidden, over the rules of hub/authz; and the list scopes, pure
//     too, that narrow a list's query to what the caller may see;
//   - the wrapper (store.go and one file per table), which loads what a
//     decision needs (the records the call fetches anyway, a project's
//     owner from a small cache, what the request has already read) and
//     applies the verdict: an unauthorized read of one record is
//     store.ErrNotFound, a list returns only what the caller may see, a
//     write without the right is api.Forbidden (403 through the one error
//     table, api/codes.go).
//
// It imports only api (the error type), hub/authz (the rules) and store
// (the interface it wraps and its records): it must not reach the Server,
// so that the floor it enforces cannot depend on what a handler did
// before it.
package authstore
