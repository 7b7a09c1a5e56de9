package api_test

import (
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/projectcases"
)

// TestCreateProjectRequestValidate: the one rule of a project create, on
// the table the CLI and Hub tests use too.
func TestCreateProjectRequestValidate(t *testing.T) {
	for _, tc := range projectcases.Cases {
		req := tc.Req
		err := req.Validate()
		if (err == nil) != tc.OK {
			t.Errorf("%s: Validate = %v, want ok %v", tc.Name, err, tc.OK)
		}
		if err != nil && !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("%s: %v, want invalid_request", tc.Name, err)
		}
	}
}
