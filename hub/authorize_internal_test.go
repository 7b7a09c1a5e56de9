package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
)

// TestGuardRefusesARouteWithoutACheck: a handler that answers 200 without
// asking hub/authz gets a 500 instead, and its body is dropped; one that
// asks is served.
func TestGuardRefusesARouteWithoutACheck(t *testing.T) {
	ctx := context.Background()
	s, _ := newInternalServer(t)
	tok, err := s.BootstrapAdmin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send := func(h httpapi.Handler) (int, string) {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		s.id.RequireAuth(httpapi.Serve(s.log, h))(w, req)
		return w.Code, w.Body.String()
	}
	code, body := send(func(r *http.Request, c *Caller) (int, any, error) {
		return http.StatusOK, map[string]string{"secret": "everyone sees this"}, nil
	})
	if code != http.StatusInternalServerError || strings.Contains(body, "everyone") {
		t.Fatalf("unchecked route: %d %s", code, body)
	}
	code, _ = send(func(r *http.Request, c *Caller) (int, any, error) {
		if err := httpapi.Authorize(r.Context(), s.log, c, authz.HubRead, authz.Resource{}, nil); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]string{"ok": "yes"}, nil
	})
	if code != http.StatusOK {
		t.Fatalf("checked route: %d", code)
	}
}
