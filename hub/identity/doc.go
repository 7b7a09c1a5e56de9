// Package identity is who a request of the Hub comes from, and the
// credentials that say so: the authentication of every request (user and
// access tokens, agent tokens signed with the Hub's key, brokers' signed
// requests with their nonce store), the per-address limits on strangers
// and on failed credentials, the agent-token key and the sealing of
// broker secrets and Hub secrets under the secrets key, users, access and
// scrape tokens, the OIDC sign-in routes, the bootstrap admin, agent
// token renewal and its generations, and who may read /metrics.
//
// The Hub builds one Service (New) and serves its Routes; it wraps its
// own authenticated routes in RequireAuth, and the routes that check
// their own credentials (the control channel, a broker's signed secret
// read) call AuthenticateLimited.
//
// It imports api, hub/authz (the caller it builds and the rules its
// routes ask), hub/authstore (its store calls run as the system before
// there is a caller, and it puts the caller in the request's context),
// hub/httpapi (route shapes, bodies, the check mark and its guard),
// hub/signin (the OIDC provider's protocol), hub/storeerr (the one
// store-to-API error mapping), hub/transport (client addresses, the
// per-address buckets, the per-caller busy slots), store (the records and
// the interface it is handed), and wire (the brokers' request signature
// is the protocol's, shared with the broker that signs). Never hub: what
// it needs of the Hub (the metrics handler, a project's lookup) comes in
// Options as a value, so the import graph runs from hub to identity only.
package identity
