package hub

import (
	"errors"

	"github.com/scion-go/scion/store"
)

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
func isExists(err error) bool   { return errors.Is(err, store.ErrAlreadyExists) }
func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
