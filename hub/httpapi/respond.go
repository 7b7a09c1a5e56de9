package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/storeerr"
)

// WriteJSON writes v with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes the standard error body (PublicError's), logging an
// internal error in full to log.
func WriteError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	// A store error no handler mapped is still an answer about the
	// resource asked for, not an internal error; the log names the route
	// that should have mapped it.
	var ae *api.Error
	if m := storeerr.Map(err, api.CodeNotFound, "resource"); !errors.As(err, &ae) && errors.As(m, &ae) {
		log.Warn("store error answered without a handler's mapping", "method", r.Method, "path", r.URL.Path, "err", err)
		err = m
	}
	e := api.AsError(err)
	if pub := PublicError(e); pub != e {
		if e.Code == api.CodeInternal {
			log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		} else {
			log.Warn("error answered with internal addresses scrubbed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		e = pub
	}
	WriteJSON(w, e.Status, api.ErrorBody{Error: e})
}

// PublicError is what a caller may see of e. Internal errors get a
// generic message: their text may hold details a caller must not see.
// Other failures (5xx) may carry a transport error's text, and a broker's
// answer of any status its runtime's (a registry or daemon address in a
// 400, say): they have internal addresses scrubbed (the log keeps them).
// The Hub's own refusals (4xx) are left as they are: what they quote is
// the caller's input.
//
// A broker's answer is the broker's, whatever it says: the Hub
// authenticated and authorized the caller itself, so a broker's 401, 403
// or 407 (or its code unauthorized or forbidden) would read as the
// caller's own credentials or rights failing. It is answered as the
// broker's failure, 502 runtime_error, with the broker's words (peerAuth).
func PublicError(e *api.Error) *api.Error {
	switch {
	case e == nil || (e.Status < 500 && !e.FromPeer):
		return e
	case e.Code == api.CodeInternal:
		return api.Internal("internal error; see the Hub log")
	case peerAuth(e):
		c := *e
		c.Status, c.Code = api.StatusForCode(api.CodeRuntimeError), api.CodeRuntimeError
		c.Message = "the runtime broker refused the request: " + ScrubAddresses(e.Message)
		return &c
	}
	if m := ScrubAddresses(e.Message); m != e.Message {
		c := *e
		c.Message = m
		return &c
	}
	return e
}

// peerAuth reports whether e is a broker's answer that only the Hub may
// give: an authentication or authorization failure.
func peerAuth(e *api.Error) bool {
	if !e.FromPeer {
		return false
	}
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		return true
	}
	return e.Code == api.CodeUnauthorized || e.Code == api.CodeForbidden
}

// DecodeJSON reads a bounded JSON body into v, refusing unknown fields,
// trailing data and wrong content types.
func DecodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return api.Errorf(api.CodeUnsupportedMediaType, "Content-Type must be application/json")
		}
	}
	// The body is already bounded by Serve (or the caller).
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return api.BadRequest("request body must hold a single JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return api.Errorf(api.CodeRequestTooLarge, "request body exceeds %d bytes", mbe.Limit)
	case errors.Is(err, io.EOF):
		return api.BadRequest("request body is empty")
	case errors.As(err, &se):
		return api.BadRequest("malformed JSON at offset %d", se.Offset)
	case errors.As(err, &te):
		return api.BadRequest("field %q must be %s", te.Field, te.Type.String())
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return api.BadRequest("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return api.BadRequest("malformed JSON: %v", err)
}
