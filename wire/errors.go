package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/scion-go/scion/api"
)

var (
	// ErrClosed is wrapped by the reason Run returns after Close or after
	// Run's ctx ended.
	ErrClosed = errors.New("wire: connection closed")
	// ErrHeartbeatTimeout is wrapped by the reason Run returns when the
	// peer sent nothing, not even a pong, for HeartbeatInterval+Grace.
	ErrHeartbeatTimeout = errors.New("wire: heartbeat timeout")
	// ErrStreamClosed is what Stream.Recv returns after Stream.Close.
	ErrStreamClosed = errors.New("wire: stream closed")
)

// unavailable is what pending and new calls get once the connection ended.
func unavailable(reason error) *api.Error {
	return &api.Error{
		Status:  http.StatusServiceUnavailable,
		Code:    api.CodeBrokerUnavailable,
		Message: "control channel closed: " + reason.Error(),
	}
}

func timeoutError(method string) *api.Error {
	return &api.Error{
		Status:  http.StatusGatewayTimeout,
		Code:    api.CodeBrokerTimeout,
		Message: fmt.Sprintf("%s: deadline exceeded", method),
	}
}

func tooLarge(what string, n, limit int64) *api.Error {
	return &api.Error{
		Status:  http.StatusRequestEntityTooLarge,
		Code:    api.CodeRequestTooLarge,
		Message: fmt.Sprintf("%s of %d bytes exceeds the %d byte limit", what, n, limit),
	}
}

// ctxError is what a caller gets when its ctx ended first: a timeout error
// for a deadline, ctx.Err() for an explicit cancellation (the caller asked
// for it, so it is not the peer's failure).
func ctxError(ctx context.Context, method string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timeoutError(method)
	}
	return ctx.Err()
}

// fromPeer fills in the HTTP status, which does not cross the wire, and
// marks the error as the peer's (api.Error.FromPeer).
func fromPeer(e *api.Error) *api.Error {
	c := *e
	c.Status = api.StatusForCode(c.Code)
	c.FromPeer = true
	return &c
}

// handlerError converts a handler's error for the wire. A handler that gave
// up because its deadline passed reports a timeout whatever it returned.
func handlerError(ctx context.Context, method string, err error) *api.Error {
	var e *api.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timeoutError(method)
	}
	return api.Internal("%s", err.Error())
}
