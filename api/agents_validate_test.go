package api_test

import (
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/agentcases"
)

// TestCreateAgentRequestValidate: the one rule of an agent create, on
// the shared table every layer's test feeds to its own check.
func TestCreateAgentRequestValidate(t *testing.T) {
	for _, tc := range agentcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			req := tc.Apply("web")
			err := req.Validate()
			switch {
			case tc.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.OK && err == nil:
				t.Fatal("accepted")
			case !tc.OK:
				if e := api.AsError(err); e.Status != http.StatusBadRequest || e.Code != api.CodeInvalidRequest {
					t.Fatalf("refused with %d %s, want 400 invalid_request: %v", e.Status, e.Code, err)
				}
			}
		})
	}
}
