package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync/atomic"

	"github.com/scion-go/scion/api"
)

// Access is what the Hub's access log says of one request beyond the
// request line: its ID (sent back in X-Request-Id, printed by the CLI
// with an error) and, once authenticated, its caller.
type Access struct {
	ID     string
	caller atomic.Pointer[string]
}

type accessKey struct{}

// WithAccess is ctx carrying a.
func WithAccess(ctx context.Context, a *Access) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

// AccessOf is the request's Access, nil outside the access log.
func AccessOf(ctx context.Context) *Access {
	a, _ := ctx.Value(accessKey{}).(*Access)
	return a
}

// NoteCaller records who the request authenticated as, for the log line.
func NoteCaller(ctx context.Context, principal string) {
	if a := AccessOf(ctx); a != nil {
		a.caller.Store(&principal)
	}
}

// Caller is the principal NoteCaller recorded, "" for none.
func (a *Access) Caller() string {
	if p := a.caller.Load(); p != nil {
		return *p
	}
	return ""
}

// RequestID is the client's X-Request-Id when it is a plain token (at
// most 64 letters, digits, '-', '_' or '.': a proxy's ID, kept so that
// both logs correlate; anything else could forge log lines), else a new
// random one.
func RequestID(r *http.Request) string {
	if id := r.Header.Get(api.HeaderRequestID); validRequestID(id) {
		return id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}
