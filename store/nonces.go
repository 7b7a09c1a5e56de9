package store

import (
	"context"
	"time"
)

// BrokerNonces are the nonces of broker requests the Hub accepted, kept
// while a replay of the request would still pass the signature's
// timestamp check (see wire.VerifySignature). In the database, not in
// memory, so a request captured before a Hub restart, or sent to another
// Hub replica, is still refused.
type BrokerNonces interface {
	// UseNonce records brokerID's nonce as used until expiresAt. A nonce
	// already used and not expired at now is ErrAlreadyExists: it is one
	// statement, so of two uses racing exactly one succeeds. ErrNotFound
	// if the broker does not exist.
	UseNonce(ctx context.Context, brokerID, nonce string, now, expiresAt time.Time) error
	// PruneNonces deletes the nonces expired at now.
	PruneNonces(ctx context.Context, now time.Time) (int, error)
}
