// Package transport holds the Hub's listener and HTTP server guards:
// the connection caps per client address and in all (ConnLimiter), the
// rules a request body must keep to (a stall bound and a minimum rate),
// the busy slots of one authenticated caller, the per-address token
// buckets of the routes strangers can reach (IPLimiter), and the
// http.Server with its timeouts (NewHTTPServer).
//
// It knows nothing of routes, callers or records: the Hub passes a
// caller's principal as a string and answers its own refusals. Of ours
// it imports only api, for the error body a refused connection is
// written before it is closed (internal/deptest holds the rule).
package transport
