// Package api holds the REST wire types of the Hub API (/api/v1) and the one
// error type every endpoint returns, with the one table of error codes and
// their HTTP statuses (codes.go). It imports nothing of ours so that the
// client, the CLI and third-party tools can depend on it alone.
package api

// Version is the API path prefix.
const Prefix = "/api/v1"
