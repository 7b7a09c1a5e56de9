package storeerr

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// Every store error maps to an API error that is not a 500, with the
// resource's own not-found code; API errors and other errors pass as they
// are.
func TestStoreErr(t *testing.T) {
	wrapped := func(e error) error { return fmt.Errorf("sqlite: get secret: %w", e) }
	tests := []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{store.ErrNotFound, http.StatusNotFound, api.CodeSecretNotFound, `secret "k" not found`},
		{wrapped(store.ErrNotFound), http.StatusNotFound, api.CodeSecretNotFound, `secret "k" not found`},
		{store.ErrAlreadyExists, http.StatusConflict, api.CodeAlreadyExists, `secret "k" already exists`},
		{wrapped(store.ErrConflict), http.StatusConflict, api.CodeConflict, ""},
		{store.ErrQuota, http.StatusTooManyRequests, api.CodeQuotaExceeded, ""},
		{wrapped(store.ErrReservationScope), http.StatusConflict, api.CodeReservationScopeConflict, ""},
		{store.ErrTokenUsed, http.StatusUnauthorized, api.CodeUnauthorized, ""},
		{store.ErrKeyInUse, http.StatusConflict, api.CodeConflict, ""},
		{store.ErrBadCursor, http.StatusBadRequest, api.CodeInvalidRequest, ""},
		// An API error wins over the store error it wraps.
		{fmt.Errorf("%w: %w", api.Unauthorized("no"), store.ErrNotFound), http.StatusUnauthorized, api.CodeUnauthorized, "no"},
	}
	for _, tc := range tests {
		e := api.AsError(Map(tc.err, api.CodeSecretNotFound, `secret "k"`))
		if e.Status != tc.status || e.Code != tc.code || (tc.msg != "" && e.Message != tc.msg) {
			t.Errorf("%v: got %d %s %q, want %d %s %q", tc.err, e.Status, e.Code, e.Message, tc.status, tc.code, tc.msg)
		}
	}
	// The scope conflict tells the operator why and what to do.
	e := api.AsError(Map(wrapped(store.ErrReservationScope), api.CodeAgentNotFound, `agent "web-1"`))
	if want := `agent "web-1" holds its capacity slot on another runtime broker; reservations are never moved ` +
		`between brokers: stop the agent there (which frees the slot) and try again`; e.Message != want {
		t.Errorf("scope conflict message %q, want %q", e.Message, want)
	}
	if Map(nil, api.CodeNotFound, "x") != nil {
		t.Error("nil is not nil")
	}
	other := errors.New("disk full")
	if Map(other, api.CodeNotFound, "x") != other {
		t.Error("a non-store error was changed")
	}
}
