package hub

import (
	"errors"

	"github.com/scion-go/scion/store"
)

// Predicates for the handlers that decide on a store error rather than
// answer it (an agent deleted meanwhile is nothing to reconcile).
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
func isExists(err error) bool   { return errors.Is(err, store.ErrAlreadyExists) }
func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
