package api

import "slices"

// The checks of an agent action (POST /agents/{agent}/{action}) and of
// the Idempotency-Key any mutating call may carry, the client's and the
// Hub's.

// AgentActions are the lifecycle verbs of POST /agents/{agent}/{action}.
var AgentActions = []string{"start", "stop", "restart", "suspend", "resume"}

// MaxIdempotencyKeyLen bounds the Idempotency-Key header (clients use
// UUIDs or 32 hex digits). It is kept with a queued stop and on the
// broker, so it is bounded.
const MaxIdempotencyKeyLen = 255

// CheckAgentAction refuses a verb that is not one of AgentActions (404
// not_found: the route names no such action).
func CheckAgentAction(verb string) error {
	if slices.Contains(AgentActions, verb) {
		return nil
	}
	return NotFound(CodeNotFound, "unknown agent action %s: use start, stop, restart, suspend or resume", Quote(verb))
}

// CheckIdempotencyKey refuses a key over MaxIdempotencyKeyLen, or one
// holding a control character ("" is none).
func CheckIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKeyLen {
		return BadRequest("%s is longer than %d bytes", HeaderIdempotencyKey, MaxIdempotencyKeyLen)
	}
	return CheckText(HeaderIdempotencyKey, k, MaxIdempotencyKeyLen)
}
