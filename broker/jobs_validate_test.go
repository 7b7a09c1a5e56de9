package broker

import (
	"fmt"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/jobcases"
	"github.com/scion-go/scion/wire"
)

// TestJobRunSharedCases: the broker answers a job.run of every value of
// the shared table as every other layer does: accepted, or refused with
// invalid_request before anything is accepted. (The table's cluster b200,
// and none, are this fleet's gpu: a cluster the broker does not offer is
// cluster_not_found, which TestJobRunRefusals covers.)
func TestJobRunSharedCases(t *testing.T) {
	e := startJobsBroker(t, nil)
	recv(t, e.hub.hellos, "hello")
	for i, tc := range jobcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := tc.Apply()
			if r.Cluster == jobcases.Base.Cluster || r.Cluster == "" {
				r.Cluster = "gpu"
			}
			run := wire.JobRun{Job: api.Job{ID: fmt.Sprintf("case-%d", i), AgentID: "ab", Cluster: r.Cluster, Image: r.Image,
				Command: r.Command, GPUs: r.GPUs, Queue: r.Queue, DeadlineSeconds: int64(r.Deadline.Seconds()), State: api.JobStatePending},
				Profile: "team-b", Env: r.Env}
			var acc wire.JobAccepted
			err := e.hub.call(wire.MethodJobRun, run, &acc)
			switch {
			case tc.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.OK && !api.IsCode(err, api.CodeInvalidRequest):
				t.Fatalf("got %v, want invalid_request", err)
			}
		})
	}
}

// TestJobCommandsAreKeyed: a job.run is answered from the broker's record
// of keyed commands, as the agent commands are: resent with its key after
// a lost answer it gets the first answer (a body changed on purpose shows
// it was not judged again); without a key it is judged.
func TestJobCommandsAreKeyed(t *testing.T) {
	e := startJobsBroker(t, nil)
	recv(t, e.hub.hellos, "hello")
	run := jobRun("keyed", "ab", "gpu", "team-b")
	var first, again wire.JobAccepted
	if err := e.hub.call(wire.MethodJobRun, run, &first, wire.WithKey("job.run:keyed")); err != nil {
		t.Fatal(err)
	}
	recv(t, e.runner.submits, "submit")
	changed := run
	changed.Job.Image = "" // refused if it were judged again
	if err := e.hub.call(wire.MethodJobRun, changed, &again, wire.WithKey("job.run:keyed")); err != nil || again != first {
		t.Fatalf("resent run: %+v, %v; want the first answer %+v", again, err, first)
	}
	if err := e.hub.call(wire.MethodJobRun, changed, &again); !api.IsCode(err, api.CodeInvalidRequest) {
		t.Fatalf("the same body without the key: %v; want it judged (invalid_request)", err)
	}
}
