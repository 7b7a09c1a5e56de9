package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes. Names follow ../shared/spec exactly where the spec gives one.
const (
	CodeInvalidRequest        = "invalid_request"
	CodeUnauthorized          = "unauthorized"
	CodeForbidden             = "forbidden"
	CodeNotFound              = "not_found"
	CodeAgentNotFound         = "agent_not_found"
	CodeProjectNotFound       = "project_not_found"
	CodeBrokerNotFound        = "runtime_broker_not_found"
	CodeAlreadyExists         = "already_exists"
	CodeConflict              = "conflict"
	CodeRequestTooLarge       = "request_too_large"
	CodeQuotaExceeded         = "quota_exceeded"
	CodeBrokerOffline         = "runtime_broker_offline"
	CodeBrokerUnavailable     = "runtime_broker_unavailable"
	CodeBrokerTimeout         = "runtime_broker_timeout"
	CodeNoBroker              = "no_runtime_broker"
	CodeBrokerNotProvider     = "runtime_broker_not_provider"
	CodeMultipleBrokers       = "runtime_broker_selection_required"
	CodeDefaultBrokerOffline  = "default_runtime_broker_offline"
	CodeInvalidPhase          = "invalid_phase"
	CodeRuntimeError          = "runtime_error"
	CodeRateLimited           = "rate_limited"
	CodeInternal              = "internal"
	CodeUnsupportedMediaType  = "unsupported_media_type"
	CodeMethodNotAllowed      = "method_not_allowed"
	CodeGlobalProjectDisabled = "global_project_disabled"
	CodeProfileNotAvailable   = "profile_not_available"
	// CodePortPoolExhausted: the broker has too few free host ports left
	// in its port pool for the ports an agent asks to expose.
	CodePortPoolExhausted = "port_pool_exhausted"
	// CodeIdempotencyKeyReused: an Idempotency-Key came back with a
	// different request than the one it was first used for.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeBrokerMissing: the agent's runtime broker is no longer
	// registered (it was deregistered with force), so nothing can reach
	// the agent's workload (409, the spec's code).
	CodeBrokerMissing = "runtime_broker_missing"
	// CodeBrokerHasAgents: a deregistration without force of a broker that
	// still has agents (409; details.agents lists them).
	CodeBrokerHasAgents = "runtime_broker_has_agents"
)

// Error is the single error type of the Hub API. On the wire it is wrapped as
// {"error":{"code":...,"message":...,"details":{...}}}.
type Error struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// FromPeer: the other end of a broker control channel sent it (set by
	// package wire on receipt, never carried in JSON). Its message is the
	// broker's or its runtime's words, which may name internal addresses
	// whatever the status, so the Hub scrubs it before a caller sees it.
	FromPeer bool `json:"-"`
}

// ErrorBody is the JSON envelope of an Error.
type ErrorBody struct {
	Error *Error `json:"error"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// WithDetail returns a copy of e with one more detail set.
func (e *Error) WithDetail(k string, v any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for kk, vv := range e.Details {
		c.Details[kk] = vv
	}
	c.Details[k] = v
	return &c
}

// Errorf builds an Error.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Convenience constructors for the common cases.
func BadRequest(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, CodeInvalidRequest, format, args...)
}
func Unauthorized(msg string) *Error {
	return Errorf(http.StatusUnauthorized, CodeUnauthorized, "%s", msg)
}
func Forbidden(format string, args ...any) *Error {
	return Errorf(http.StatusForbidden, CodeForbidden, format, args...)
}
func NotFound(code, format string, args ...any) *Error {
	return Errorf(http.StatusNotFound, code, format, args...)
}
func Conflict(code, format string, args ...any) *Error {
	return Errorf(http.StatusConflict, code, format, args...)
}
func Internal(format string, args ...any) *Error {
	return Errorf(http.StatusInternalServerError, CodeInternal, format, args...)
}

// AsError extracts an *Error from err, or wraps err as an internal error.
// A nil err gives nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Status == 0 {
			c := *e
			c.Status = StatusForCode(e.Code)
			return &c
		}
		return e
	}
	return Internal("%s", err.Error())
}

// IsCode reports whether err is an *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// StatusForCode gives the HTTP status conventionally used with a code, for
// errors that crossed a boundary (the control channel) without their status.
func StatusForCode(code string) int {
	switch code {
	case CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden, CodeBrokerNotProvider:
		return http.StatusForbidden
	case CodeNotFound, CodeAgentNotFound, CodeProjectNotFound, CodeBrokerNotFound:
		return http.StatusNotFound
	case CodeAlreadyExists, CodeConflict, CodeIdempotencyKeyReused, CodeInvalidPhase, CodeProfileNotAvailable, CodeGlobalProjectDisabled, CodeMultipleBrokers, CodeNoBroker:
		return http.StatusConflict
	case CodeRequestTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeQuotaExceeded, CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeBrokerOffline, CodeBrokerUnavailable, CodeDefaultBrokerOffline, CodePortPoolExhausted:
		return http.StatusServiceUnavailable
	case CodeBrokerTimeout:
		return http.StatusGatewayTimeout
	case CodeRuntimeError:
		return http.StatusBadGateway
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	}
	return http.StatusInternalServerError
}
