package wire

import (
	"context"
	"errors"

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
	return api.Errorf(api.CodeBrokerUnavailable, "control channel closed: %s", reason.Error())
}

func timeoutError(method string) *api.Error {
	return api.Errorf(api.CodeBrokerTimeout, "%s: deadline exceeded", method)
}

func tooLarge(what string, n, limit int64) *api.Error {
	return api.Errorf(api.CodeRequestTooLarge, "%s of %d bytes exceeds the %d byte limit", what, n, limit)
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

// peerError is an api.Error as a frame carries it: with its HTTP status,
// which the API's JSON leaves to the response line. A peer that predates
// the status sends none.
type peerError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	Status  int            `json:"status,omitempty"`
}

func toPeer(e *api.Error) peerError {
	return peerError{Code: e.Code, Message: e.Message, Details: e.Details, Status: e.Status}
}

func (p *peerError) apiError() *api.Error {
	return &api.Error{Status: p.Status, Code: p.Code, Message: p.Message, Details: p.Details}
}

// fromPeer marks the error as the peer's (api.Error.FromPeer) and keeps
// the status it sent, so that a broker's 501 or 410 reaches the caller as
// such. A status that is none (an older peer) or not an error status is
// the code's from this side's table.
func fromPeer(e *api.Error) *api.Error {
	c := *e
	if c.Status < 400 || c.Status > 599 {
		c.Status = api.StatusForCode(c.Code)
	}
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
