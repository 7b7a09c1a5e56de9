package api

import "net/http"

// Error codes. Each is declared here once, with its HTTP status in
// codeStatus below; the constructors (Errorf, NotFound, ...), the Hub's
// error writer, the control channel and the client all read that table.
// Names and statuses follow the upstream multi-broker spec exactly where it gives
// them. A new code needs a row in codeStatus and in the test's expected
// table (codes_test.go), or the api tests fail.
const (
	// 400: the request is malformed or names something invalid.
	CodeInvalidRequest = "invalid_request"
	// 401: no, a bad or an expired credential.
	CodeUnauthorized = "unauthorized"
	// 403: the caller may not do this.
	CodeForbidden = "forbidden"
	// CodeBrokerNotProvider: the broker named does not provide for the
	// agent's project (403).
	CodeBrokerNotProvider = "runtime_broker_not_provider"

	// 404s: the resource is unknown (or hidden from the caller).
	CodeNotFound            = "not_found"
	CodeAgentNotFound       = "agent_not_found"
	CodeProjectNotFound     = "project_not_found"
	CodeBrokerNotFound      = "runtime_broker_not_found"
	CodeSecretNotFound      = "secret_not_found"
	CodeAccessTokenNotFound = "access_token_not_found"
	CodeUserNotFound        = "user_not_found"
	// CodeJobNotFound: no delegated Job by that ID (or not reachable by
	// the caller).
	CodeJobNotFound = "job_not_found"
	// CodeClusterNotFound: the agent's profile offers no spoke cluster of
	// that name (its fleet file); a cluster it does not offer answers the
	// same.
	CodeClusterNotFound = "cluster_not_found"

	// 405: the route has no such method (or the control channel no such
	// request method).
	CodeMethodNotAllowed = "method_not_allowed"

	// 409s: the request conflicts with the state of the resource.
	CodeAlreadyExists         = "already_exists"
	CodeConflict              = "conflict"
	CodeInvalidPhase          = "invalid_phase"
	CodeNoBroker              = "no_runtime_broker"
	CodeMultipleBrokers       = "runtime_broker_selection_required"
	CodeGlobalProjectDisabled = "global_project_disabled"
	CodeProfileNotAvailable   = "profile_not_available"
	// CodeIdempotencyKeyReused: an Idempotency-Key came back with a
	// different request than the one it was first used for.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeBrokerMissing: the agent's runtime broker is no longer
	// registered (it was deregistered with force), so nothing can reach
	// the agent's workload.
	CodeBrokerMissing = "runtime_broker_missing"
	// CodeBrokerHasAgents: a deregistration without force of a broker that
	// still has agents (details.agents lists them).
	CodeBrokerHasAgents = "runtime_broker_has_agents"
	// Flat Runtime Brokers (multi-broker spec, "Flat Runtime Brokers",
	// "Inconsistent agent placement", "Capacity of flat Runtime Brokers").
	// CodeTargetMoveUnsupported: a pinned agent cannot move, and nothing
	// moves onto a flat broker.
	CodeTargetMoveUnsupported = "runtime_target_move_unsupported"
	// CodeTargetPinStale: the agent's pin does not name the broker it is
	// assigned to, is incomplete, or the agent has no broker.
	CodeTargetPinStale = "runtime_target_pin_stale"
	// CodeTargetMismatch: the agent's broker no longer serves a single
	// runtime target, or serves another one than the agent's pin.
	CodeTargetMismatch = "runtime_target_mismatch"
	// CodeReservationScopeConflict: the agent holds a capacity
	// reservation on another broker than the one asked for; reservations
	// never move.
	CodeReservationScopeConflict = "broker_reservation_scope_conflict"
	// CodeExperimentDisabled: the request needs a Hub experiment that is
	// off (a flat instance's first registration with
	// hub.flat_runtime_brokers off).
	CodeExperimentDisabled = "experiment_disabled"
	// Moves (multi-broker spec, "Moving an Agent to Another Runtime
	// Broker"); details.check names the check that refused and
	// details.plan holds every check's status.
	// CodeMoveRefused: the agent or the two brokers are not in a state
	// the move can start from (the workspace mode, the export, the
	// workspace's placement, an agent moving itself to a broker that does
	// not serve its project).
	CodeMoveRefused = "agent_move_refused"

	// CodeAttachClosed: the attach session's terminal is closed; input
	// sent to it is lost (410).
	CodeAttachClosed = "attach_closed"

	// CodePreconditionFailed: a write's If-Match names another version
	// than the stored one (someone wrote in between); details.etag is the
	// current one (412).
	CodePreconditionFailed = "precondition_failed"
	// CodeMoveBrokerOutdated: a broker of the move does not report its
	// workspace storage or the agent-move capability (an older broker),
	// or the source is offline and cannot remove its copy (412).
	CodeMoveBrokerOutdated = "agent_move_unsupported_broker"

	// 413: a request body or control-channel message over its limit.
	CodeRequestTooLarge = "request_too_large"
	// 415: a body that is not application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"

	// 429s: a limit was reached; retry later (or elsewhere).
	CodeQuotaExceeded = "quota_exceeded"
	CodeRateLimited   = "rate_limited"

	// 500: a failure inside the Hub or broker; its message is only logged.
	CodeInternal = "internal"

	// 501s: the Hub or the agent's runtime lacks the feature.
	// CodeUnsupportedOperation: the agent's runtime cannot do the
	// operation (suspend on Kubernetes, exec on a runtime without it).
	CodeUnsupportedOperation = "unsupported_operation"
	// CodeSecretsNotConfigured: the Hub has no secrets key.
	CodeSecretsNotConfigured = "secrets_not_configured"
	// CodeOIDCNotConfigured: the Hub has no OIDC provider.
	CodeOIDCNotConfigured = "oidc_not_configured"
	// CodeMoveRecreateNotEnabled: executing a forced move whose transfer
	// mode is recreate (its dry run is allowed).
	CodeMoveRecreateNotEnabled = "agent_move_recreate_not_enabled"

	// 502s: something behind the Hub failed.
	CodeRuntimeError = "runtime_error"
	// CodeOIDCProviderError: the provider could not be reached or gave an
	// answer the Hub cannot use; the Hub log says more.
	CodeOIDCProviderError = "oidc_provider_error"

	// 503s: the agent's runtime broker cannot be reached now.
	CodeBrokerOffline        = "runtime_broker_offline"
	CodeBrokerUnavailable    = "runtime_broker_unavailable"
	CodeDefaultBrokerOffline = "default_runtime_broker_offline"
	// CodePortPoolExhausted: the broker has too few free host ports left
	// in its port pool for the ports an agent asks to expose.
	CodePortPoolExhausted = "port_pool_exhausted"

	// 504: a command to a runtime broker ran past its deadline.
	CodeBrokerTimeout = "runtime_broker_timeout"
)

// Error codes of the sign-in routes (RFC 8628's, all 400; see auth.go).
const (
	CodeAuthorizationPending = "authorization_pending"
	CodeSlowDown             = "slow_down"
	CodeExpiredToken         = "expired_token"
	CodeAccessDenied         = "access_denied"
)

// codeStatus is the table of error codes: every code the API answers with
// and its HTTP status.
var codeStatus = map[string]int{
	CodeInvalidRequest:       http.StatusBadRequest,
	CodeAuthorizationPending: http.StatusBadRequest,
	CodeSlowDown:             http.StatusBadRequest,
	CodeExpiredToken:         http.StatusBadRequest,
	CodeAccessDenied:         http.StatusBadRequest,

	CodeUnauthorized: http.StatusUnauthorized,

	CodeForbidden:         http.StatusForbidden,
	CodeBrokerNotProvider: http.StatusForbidden,

	CodeNotFound:            http.StatusNotFound,
	CodeAgentNotFound:       http.StatusNotFound,
	CodeProjectNotFound:     http.StatusNotFound,
	CodeBrokerNotFound:      http.StatusNotFound,
	CodeSecretNotFound:      http.StatusNotFound,
	CodeAccessTokenNotFound: http.StatusNotFound,
	CodeUserNotFound:        http.StatusNotFound,
	CodeJobNotFound:         http.StatusNotFound,
	CodeClusterNotFound:     http.StatusNotFound,

	CodeMethodNotAllowed: http.StatusMethodNotAllowed,

	CodeAlreadyExists:         http.StatusConflict,
	CodeConflict:              http.StatusConflict,
	CodeInvalidPhase:          http.StatusConflict,
	CodeNoBroker:              http.StatusConflict,
	CodeMultipleBrokers:       http.StatusConflict,
	CodeGlobalProjectDisabled: http.StatusConflict,
	CodeProfileNotAvailable:   http.StatusConflict,
	CodeIdempotencyKeyReused:  http.StatusConflict,
	CodeBrokerMissing:         http.StatusConflict,
	CodeBrokerHasAgents:       http.StatusConflict,

	CodeTargetMoveUnsupported:    http.StatusConflict,
	CodeTargetPinStale:           http.StatusConflict,
	CodeTargetMismatch:           http.StatusConflict,
	CodeReservationScopeConflict: http.StatusConflict,
	CodeExperimentDisabled:       http.StatusConflict,
	CodeMoveRefused:              http.StatusConflict,

	CodeAttachClosed: http.StatusGone,

	CodePreconditionFailed: http.StatusPreconditionFailed,
	CodeMoveBrokerOutdated: http.StatusPreconditionFailed,

	CodeRequestTooLarge:      http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,

	CodeQuotaExceeded: http.StatusTooManyRequests,
	CodeRateLimited:   http.StatusTooManyRequests,

	CodeInternal: http.StatusInternalServerError,

	CodeUnsupportedOperation:   http.StatusNotImplemented,
	CodeSecretsNotConfigured:   http.StatusNotImplemented,
	CodeOIDCNotConfigured:      http.StatusNotImplemented,
	CodeMoveRecreateNotEnabled: http.StatusNotImplemented,

	CodeRuntimeError:      http.StatusBadGateway,
	CodeOIDCProviderError: http.StatusBadGateway,

	CodeBrokerOffline:        http.StatusServiceUnavailable,
	CodeBrokerUnavailable:    http.StatusServiceUnavailable,
	CodeDefaultBrokerOffline: http.StatusServiceUnavailable,
	CodePortPoolExhausted:    http.StatusServiceUnavailable,

	CodeBrokerTimeout: http.StatusGatewayTimeout,
}

// statusCode is the code of a response that carries none (a proxy's error
// page, an error from a peer that predates a code): the general code of
// each status.
var statusCode = map[int]string{
	http.StatusBadRequest:            CodeInvalidRequest,
	http.StatusUnauthorized:          CodeUnauthorized,
	http.StatusForbidden:             CodeForbidden,
	http.StatusNotFound:              CodeNotFound,
	http.StatusMethodNotAllowed:      CodeMethodNotAllowed,
	http.StatusConflict:              CodeConflict,
	http.StatusRequestEntityTooLarge: CodeRequestTooLarge,
	http.StatusUnsupportedMediaType:  CodeUnsupportedMediaType,
	http.StatusTooManyRequests:       CodeRateLimited,
	http.StatusInternalServerError:   CodeInternal,
	http.StatusNotImplemented:        CodeUnsupportedOperation,
	http.StatusBadGateway:            CodeRuntimeError,
	http.StatusServiceUnavailable:    CodeBrokerUnavailable,
	http.StatusGatewayTimeout:        CodeBrokerTimeout,
}

// StatusForCode is the HTTP status of an error code, from the table. An
// unknown code (a newer peer's) is 500; a peer on the control channel
// sends the status with the code, so that only matters for a peer that
// sends none.
func StatusForCode(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus is the code for an error response that carries none: the
// general code of its status, invalid_request for another 4xx and
// internal for anything else. api.StatusForCode(CodeForStatus(s)) is s for
// every status the table has a general code for.
func CodeForStatus(status int) string {
	if c, ok := statusCode[status]; ok {
		return c
	}
	if status >= 400 && status < 500 {
		return CodeInvalidRequest
	}
	return CodeInternal
}
