package cli

import (
	"testing"

	"github.com/scion-go/scion/internal/testenv/jobcases"
)

// TestJobRunFlagsSharedCases: `scion job run` refuses, as a usage error
// before any round trip, exactly the values of the shared table that the
// Hub, the broker and the spoke refuse.
func TestJobRunFlagsSharedCases(t *testing.T) {
	for _, tc := range jobcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := tc.Apply()
			f := jobRunFlags{cluster: r.Cluster, image: r.Image, queue: r.Queue, gpus: r.GPUs, deadline: r.Deadline}
			for k, v := range r.Env {
				f.env = append(f.env, k+"="+v)
			}
			_, err := f.request(r.Command)
			switch {
			case tc.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.OK && !isUsage(err):
				t.Fatalf("got %v, want a usage error", err)
			}
		})
	}
}
