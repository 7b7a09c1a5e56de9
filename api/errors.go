package api

import (
	"errors"
	"fmt"
)

// Error is the single error type of the Hub API. On the wire it is wrapped as
// {"error":{"code":...,"message":...,"details":{...}}}.
type Error struct {
	// Status is the HTTP status: the code's (StatusForCode) for every
	// Error built here, a response's or a control-channel peer's as
	// received.
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// FromPeer: the other end of a broker control channel sent it (set by
	// package wire on receipt, never carried in JSON). Its message is the
	// broker's or its runtime's words, which may name internal addresses
	// whatever the status, so the Hub scrubs it before a caller sees it.
	FromPeer bool `json:"-"`
	// RequestID is the Hub's X-Request-Id of the answer that carried
	// the error (set by the client, never carried in JSON): the line
	// of the Hub's access log to look for.
	RequestID string `json:"-"`
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

// Errorf builds the Error of code, with the code's status from the table
// (StatusForCode). No caller chooses a status: a code that needs another
// status is another code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Status: StatusForCode(code), Code: code, Message: fmt.Sprintf(format, args...)}
}

// Shorthands for the common codes; each is Errorf of its code.
func BadRequest(format string, args ...any) *Error {
	return Errorf(CodeInvalidRequest, format, args...)
}
func Unauthorized(msg string) *Error {
	return Errorf(CodeUnauthorized, "%s", msg)
}
func Forbidden(format string, args ...any) *Error {
	return Errorf(CodeForbidden, format, args...)
}
func Internal(format string, args ...any) *Error {
	return Errorf(CodeInternal, format, args...)
}

// NotFound is Errorf for a resource's not-found code (agent_not_found, ...).
func NotFound(code, format string, args ...any) *Error {
	return Errorf(code, format, args...)
}

// Conflict is Errorf for a 409 code (conflict, already_exists, ...).
func Conflict(code, format string, args ...any) *Error {
	return Errorf(code, format, args...)
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
