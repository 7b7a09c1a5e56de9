package hub_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/agentcases"
)

// TestCreateValidationSharedTable: POST /agents on the shared table of
// agent create values. A bad value is a 400 invalid_request that leaves
// no record and reaches no broker; a good one is created.
func TestCreateValidationSharedTable(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	rt := e.Brokers()[0].Runtime
	for i, tc := range agentcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			req := tc.Apply("default")
			if tc.OK {
				req.Name = req.Name[:min(len(req.Name), 60)] + string(rune('a'+i%26)) + string(rune('a'+i/26))
			}
			before := rt.Calls("Create")
			_, err := e.Admin.CreateAgent(ctx, req)
			if tc.OK {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if e := api.AsError(err); err == nil || e.Status != http.StatusBadRequest || e.Code != api.CodeInvalidRequest {
				t.Fatalf("answered %v, want 400 invalid_request", err)
			}
			if n := rt.Calls("Create"); n != before {
				t.Errorf("a refused create reached the runtime (%d creates)", n-before)
			}
			if req.Name != "" && api.ValidName(req.Name) {
				if _, err := e.Admin.GetAgent(ctx, req.Name, "default"); err == nil {
					t.Errorf("a refused create left agent %s", req.Name)
				}
			}
		})
	}
}
