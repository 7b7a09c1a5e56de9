// Package signin is the Hub's OIDC sign-in against its identity
// provider (RFC 8628, the device flow that scion hub auth login runs):
// the configuration (Config), discovery, the device authorization and
// token requests with the client authentication the provider accepts,
// and the verification of the ID token it returns (Identity).
//
// It holds no records: the Hub finds or creates the user of an Identity
// and mints its token. Of ours it imports only api, for the typed errors
// a sign-in is refused with (internal/deptest holds the rule).
package signin
