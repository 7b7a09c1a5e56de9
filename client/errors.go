package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/scion-go/scion/api"
)

// decodeError turns a non-2xx response into *api.Error. A Hub always sends
// {"error":{...}}; anything else (a proxy page, a plain-text 502) still
// becomes an *api.Error so callers need only one error type, with the
// general code of its status from the API's code table (api.CodeForStatus).
func decodeError(resp *http.Response) *api.Error {
	e := decodeErrorBody(resp)
	e.RequestID = resp.Header.Get(api.HeaderRequestID)
	return e
}

func decodeErrorBody(resp *http.Response) *api.Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env api.ErrorBody
	if json.Unmarshal(b, &env) == nil && env.Error != nil && (env.Error.Code != "" || env.Error.Message != "") {
		e := env.Error
		e.Status = resp.StatusCode
		if e.Code == "" {
			e.Code = api.CodeForStatus(resp.StatusCode)
		}
		if e.Message == "" {
			e.Message = statusLine(resp.StatusCode)
		}
		return e
	}
	msg := statusLine(resp.StatusCode)
	if s := snippet(b); s != "" {
		msg += ": " + s
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		// The Hub refuses with its own error body: this came from a
		// guard in front of it, and signing in to the Hub would not help.
		msg += " (not the Hub's answer: something in front of it, such as IAP, refused the request; a Hub behind IAP needs transport auth: " +
			"SCION_TRANSPORT_MODE and SCION_TRANSPORT_AUDIENCE, or the connection's --transport-mode and --transport-audience)"
	}
	return &api.Error{Status: resp.StatusCode, Code: api.CodeForStatus(resp.StatusCode), Message: msg}
}

func statusLine(status int) string {
	if t := http.StatusText(status); t != "" {
		return fmt.Sprintf("HTTP %d %s", status, t)
	}
	return fmt.Sprintf("HTTP %d", status)
}

// snippet is the first line of a non-JSON error body, shortened, so that a
// proxy's error page shows up as a hint rather than as a wall of HTML.
func snippet(b []byte) string {
	if !utf8.Valid(b) {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "..."
	}
	return s
}
