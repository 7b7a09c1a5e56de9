package hub_test

import (
	"context"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/projectcases"
)

// TestProjectCreateSharedTable: POST /projects on the shared table: a bad
// value is a 400 invalid_request that writes no project.
func TestProjectCreateSharedTable(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	for _, tc := range projectcases.Cases {
		_, err := e.Admin.CreateProject(ctx, tc.Req)
		switch {
		case tc.OK && err != nil:
			t.Errorf("%s: refused: %v", tc.Name, err)
		case !tc.OK && !api.IsCode(err, api.CodeInvalidRequest):
			t.Errorf("%s: %v, want invalid_request", tc.Name, err)
		case !tc.OK && api.ValidName(tc.Req.Name):
			if _, gerr := e.Admin.GetProject(ctx, tc.Req.Name); gerr == nil {
				t.Errorf("%s: a refused create left project %s", tc.Name, tc.Req.Name)
			}
		}
	}
}
