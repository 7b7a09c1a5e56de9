package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/transport"
)

// Handler is the shape of most handlers: it returns the status and the
// body to write, or an error that becomes the standard error body. A nil
// body with a 2xx status writes no body.
type Handler func(r *http.Request, c *authz.Caller) (int, any, error)

// StreamHandler writes its own answer (logs, exec, attach, a Job's log).
type StreamHandler func(w http.ResponseWriter, r *http.Request, c *authz.Caller)

// Route is one entry of the Hub's route table. Exactly one of Authed,
// Stream and Open is set.
type Route struct {
	Pattern string // "METHOD /path/{var}"
	// Public routes need no caller (health, join with a join token, and
	// the control channel, which checks broker signatures) or check
	// their own (metrics, a broker's signed secret read).
	Public bool
	Authed Handler
	Stream StreamHandler
	Open   http.HandlerFunc
}

// Authed is a route for authenticated callers answered by h.
func Authed(pattern string, h Handler) Route { return Route{Pattern: pattern, Authed: h} }

// Stream is a route for authenticated callers that writes its own answer.
func Stream(pattern string, h StreamHandler) Route { return Route{Pattern: pattern, Stream: h} }

// Public is a route without authentication (it checks its own, if any).
func Public(pattern string, h http.HandlerFunc) Route {
	return Route{Pattern: pattern, Public: true, Open: h}
}

// headedBody is a handler's body with response headers of its own (an
// ETag, say): Serve sets them, then writes body.
type headedBody struct {
	body   any
	header http.Header
}

// WithETag answers body with an ETag header.
func WithETag(body any, etag string) any {
	return headedBody{body: body, header: http.Header{"Etag": {etag}}}
}

// Serve adapts a Handler: it bounds the request body, runs the handler
// and writes its answer or its error.
func Serve(log *slog.Logger, h Handler) StreamHandler {
	return func(w http.ResponseWriter, r *http.Request, c *authz.Caller) {
		r.Body = http.MaxBytesReader(w, r.Body, api.MaxRequestBody)
		status, body, err := h(r, c)
		if hb, ok := body.(headedBody); ok {
			for k, v := range hb.header {
				w.Header()[k] = v
			}
			body = hb.body
		}
		switch {
		case err != nil:
			WriteError(log, w, r, err)
		case body == nil:
			w.WriteHeader(status)
		default:
			WriteJSON(w, status, body)
		}
	}
}

// Streaming adapts a stream route's handler to lift the write timeout.
func Streaming(h StreamHandler) StreamHandler {
	return func(w http.ResponseWriter, r *http.Request, c *authz.Caller) {
		sw := transport.NewStreamingWriter(w)
		defer sw.Extend()
		h(sw, r, c)
	}
}

// NewID returns a new record ID: a UUIDv7, so IDs sort by creation.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
