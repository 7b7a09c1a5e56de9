package workspace

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/keylock"
)

// ContextError maps the error of an ended context to the broker's API
// error: a deadline is runtime_broker_timeout (the Hub may retry with the
// same key to learn the outcome), a cancel runtime_broker_unavailable. The
// broker's commands answer with it too, so a wait cut short reads the same
// whether it was in the workspace or elsewhere.
func ContextError(err error) *api.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return api.Errorf(api.CodeBrokerTimeout, "request deadline expired on the runtime broker")
	}
	return api.Errorf(api.CodeBrokerUnavailable, "request cancelled")
}

// projectLocks serializes the work on one project's base clone and shared
// checkout while letting different projects proceed concurrently.
type projectLocks struct{ l keylock.Locks }

func (p *projectLocks) lock(ctx context.Context, projectID string) (unlock func(), err error) {
	unlock, err = p.l.Lock(ctx, projectID)
	if err != nil {
		return nil, ContextError(err)
	}
	return unlock, nil
}

// cleanupTimeout bounds undoing a failed workspace; the undo runs even
// when the request's own context is what failed.
const cleanupTimeout = 30 * time.Second
