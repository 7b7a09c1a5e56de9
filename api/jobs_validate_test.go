package api_test

import (
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/jobcases"
)

// TestJobRunRequestValidate: the one rule, on the shared table every
// layer's test feeds to its own check.
func TestJobRunRequestValidate(t *testing.T) {
	for _, tc := range jobcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := tc.Apply()
			req := api.JobRunRequest{Cluster: r.Cluster, Image: r.Image, Command: r.Command, GPUs: r.GPUs, Queue: r.Queue,
				DeadlineSeconds: int64(r.Deadline.Seconds()), Env: r.Env}
			err := req.Validate()
			switch {
			case tc.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.OK && !api.IsCode(err, api.CodeInvalidRequest):
				t.Fatalf("got %v, want invalid_request", err)
			}
		})
	}
}
