package jobs

import (
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/jobcases"
)

// TestValidateSharedCases: the runner's Validate agrees with every other
// layer on the shared table (a queue with a dot is Kueue's, so it is
// accepted here too; an image of 513 bytes is refused here too). A run
// naming no cluster reaches the runner with its resolved one.
func TestValidateSharedCases(t *testing.T) {
	for _, tc := range jobcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := tc.Apply()
			s := testSpec()
			s.Cluster, s.Image, s.Command, s.GPUs, s.Queue, s.Deadline, s.Env = r.Cluster, r.Image, r.Command, r.GPUs, r.Queue, r.Deadline, r.Env
			if s.Cluster == "" {
				s.Cluster = "ambient"
			}
			err := Validate(s)
			switch {
			case tc.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.OK && !api.IsCode(err, api.CodeInvalidRequest):
				t.Fatalf("got %v, want invalid_request", err)
			}
		})
	}
}
