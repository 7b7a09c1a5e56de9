package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

type idempotencyCtxKey struct{}

// WithIdempotencyKey returns a context under which every mutating call
// (POST, PUT, PATCH, DELETE) carries key as its Idempotency-Key header, so
// that retrying the call with the same context never applies it twice.
// It is a context value rather than a parameter because any mutating method
// may need it and the method signatures stay those of the routes.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyCtxKey{}, key)
}

func idempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(idempotencyCtxKey{}).(string)
	return k
}

// NewIdempotencyKey returns a random key (128 bits, hex).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
