// Package httpapi holds what every room of the Hub's HTTP surface shares:
// the shape of a route and of its handler, the JSON body rules (bounded,
// strict decoding; the one error body, with internal detail kept out),
// paging, and the authorization mark every authenticated request's
// handler must set (Authorize sets it; Guard refuses a success answer
// for a request whose handler never asked).
//
// It imports only api, hub/authz (the caller and its rules), hub/storeerr
// (the one store-to-API error mapping), hub/transport (the streaming
// writer) and store (the page type): the rooms import it, never the
// reverse, so it can never reach a Server or a record.
package httpapi
