package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// TestAgentActionAndKeyChecks: the five verbs, and a key bounded and free
// of control characters.
func TestAgentActionAndKeyChecks(t *testing.T) {
	for _, v := range api.AgentActions {
		if err := api.CheckAgentAction(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"", "delete", "Start", "start/x"} {
		if e := api.AsError(api.CheckAgentAction(v)); e == nil || e.Status != http.StatusNotFound {
			t.Errorf("action %q: %v, want 404", v, e)
		}
	}
	for k, ok := range map[string]bool{"": true, strings.Repeat("k", 255): true, strings.Repeat("k", 256): false, "a\nb": false} {
		if err := api.CheckIdempotencyKey(k); (err == nil) != ok || (err != nil && !api.IsCode(err, api.CodeInvalidRequest)) {
			t.Errorf("key of %d bytes: %v, want ok %v", len(k), err, ok)
		}
	}
}
