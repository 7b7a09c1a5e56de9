// Package storeerr turns the store's errors into the API's: the one
// mapping every Hub handler answers a failed store call with. It imports
// only api and store (the sentinel errors), so the pure plans can use it.
package storeerr

import (
	"errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// Map is the one place that turns the store's errors into API errors.
// err is what a store call about one resource returned; notFound is that
// resource's not-found code (api.CodeAgentNotFound, ...) and what names the
// resource in the messages (`project "web"`, or just "agent"). nil, API
// errors and errors that are not the store's pass unchanged.
//
// A handler that gives a store error a meaning of its own (a deleted
// broker is runtime_broker_missing, a used join token unauthorized) says so
// before calling Map; writeError maps any store error that still
// reaches it, so none answers 500.
func Map(err error, notFound, what string) error {
	if err == nil {
		return nil
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return err
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return api.NotFound(notFound, "%s not found", what)
	case errors.Is(err, store.ErrAlreadyExists):
		return api.Conflict(api.CodeAlreadyExists, "%s already exists", what)
	case errors.Is(err, store.ErrConflict):
		return api.Conflict(api.CodeConflict, "%s was changed concurrently or is in a state that forbids this; try again", what)
	case errors.Is(err, store.ErrQuota):
		return api.Errorf(api.CodeQuotaExceeded, "%s: the runtime broker is at its limit of running agents", what)
	case errors.Is(err, store.ErrReservationScope):
		// The store never moves a slot (multi-broker spec, "Capacity of flat
		// Runtime Brokers"); the operator frees it (stop or delete the agent
		// where it runs) before the agent can take one elsewhere.
		return api.Errorf(api.CodeReservationScopeConflict, "%s holds its capacity slot on another runtime broker; "+
			"reservations are never moved between brokers: stop the agent there (which frees the slot) and try again", what)
	case errors.Is(err, store.ErrTokenUsed):
		return api.Unauthorized("invalid, used or expired token")
	case errors.Is(err, store.ErrKeyInUse):
		return api.Conflict(api.CodeConflict, "a request with this %s is still in progress; retry it later", api.HeaderIdempotencyKey)
	case errors.Is(err, store.ErrBadCursor):
		return api.BadRequest("invalid page cursor: pass the nextCursor of the previous page, or none for the first")
	}
	return err
}
