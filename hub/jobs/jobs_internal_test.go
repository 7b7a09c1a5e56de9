package jobs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/internal/testenv/jobcases"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

func TestMergeJobUpdate(t *testing.T) {
	str := func(s string) *string { return &s }
	one := 1
	base := func(st api.JobState) *store.Job {
		return &store.Job{ID: "j", BrokerID: "A", Cluster: "h200", Tier: "public", State: st, Message: "was", Logs: "old", LogBytes: 3}
	}
	for _, tc := range []struct {
		name  string
		state api.JobState
		by    string
		u     wire.JobUpdate
		code  string // "" accepted
		same  bool   // errJobUnchanged
		check func(*testing.T, *store.Job)
	}{
		{name: "another broker", state: api.JobStateRunning, by: "B", u: wire.JobUpdate{State: api.JobStateSucceeded}, code: api.CodeForbidden},
		{name: "terminal changes", state: api.JobStateSucceeded, by: "A", u: wire.JobUpdate{State: api.JobStateFailed}, code: api.CodeInvalidPhase},
		{name: "terminal sent again", state: api.JobStateFailed, by: "A", u: wire.JobUpdate{State: api.JobStateFailed, Message: "x"}, same: true},
		{name: "unknown state", state: api.JobStateRunning, by: "A", u: wire.JobUpdate{State: "done"}, code: api.CodeInvalidRequest},
		{name: "result not JSON", state: api.JobStateRunning, by: "A", u: wire.JobUpdate{State: api.JobStateSucceeded, Result: json.RawMessage(`{`)}, code: api.CodeInvalidRequest},
		{name: "result too big", state: api.JobStateRunning, by: "A",
			u: wire.JobUpdate{State: api.JobStateSucceeded, Result: json.RawMessage(`"` + strings.Repeat("r", api.MaxJobResultBytes) + `"`)}, code: api.CodeRequestTooLarge},
		{name: "trace too big", state: api.JobStateRunning, by: "A", u: wire.JobUpdate{State: api.JobStateSucceeded, Trace: make([]byte, api.MaxJobTraceBytes+1)}, code: api.CodeRequestTooLarge},
		{name: "zero fields keep", state: api.JobStateQueued, by: "A", u: wire.JobUpdate{State: api.JobStateRunning},
			check: func(t *testing.T, j *store.Job) {
				if j.State != api.JobStateRunning || j.Message != "was" || j.Logs != "old" || j.FinishedAt != nil {
					t.Fatalf("%+v", j)
				}
			}},
		{name: "logs keep their tail", state: api.JobStateRunning, by: "A", u: wire.JobUpdate{State: api.JobStateRunning, Logs: str(strings.Repeat("a", api.MaxJobLogBytes) + "END")},
			check: func(t *testing.T, j *store.Job) {
				if j.LogBytes != api.MaxJobLogBytes || !strings.HasSuffix(j.Logs, "END") {
					t.Fatalf("%d bytes", j.LogBytes)
				}
			}},
		{name: "message bounded", state: api.JobStateRunning, by: "A", u: wire.JobUpdate{State: api.JobStateRunning, Message: strings.Repeat("é", maxJobMessage)},
			check: func(t *testing.T, j *store.Job) {
				if len(j.Message) > maxJobMessage || !strings.HasSuffix(j.Message, "é") {
					t.Fatalf("%d bytes", len(j.Message))
				}
			}},
		{name: "error typed", state: api.JobStateRunning, by: "A", u: wire.JobUpdate{State: api.JobStateError, ExitCode: &one, Error: &api.JobError{Message: "spoke unreachable"}},
			check: func(t *testing.T, j *store.Job) {
				if j.Error == nil || j.Error.Status != "error" || j.Error.Cluster != "h200" || j.Error.Tier != "public" || j.FinishedAt == nil || *j.ExitCode != 1 {
					t.Fatalf("%+v %+v", j, j.Error)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := base(tc.state)
			tc.u.JobID = "j"
			err := mergeJobUpdate(j, tc.by, tc.u)
			switch {
			case tc.same:
				if !errors.Is(err, errJobUnchanged) {
					t.Fatalf("got %v, want unchanged", err)
				}
			case tc.code != "":
				if !api.IsCode(err, tc.code) {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
			case err != nil:
				t.Fatal(err)
			default:
				tc.check(t, j)
			}
		})
	}
}

func TestValidateJobRunDefaults(t *testing.T) {
	req := api.JobRunRequest{Image: "busybox", Command: []string{"true"}, Cluster: "b200", Queue: "team-a.h200"}
	if err := validateJobRun(&req); err != nil {
		t.Fatal(err)
	}
	if req.DeadlineSeconds != int64(api.DefaultJobDeadline.Seconds()) {
		t.Fatalf("deadline %d", req.DeadlineSeconds)
	}
	for _, tc := range jobcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := tc.Apply()
			req := api.JobRunRequest{Cluster: r.Cluster, Image: r.Image, Command: r.Command, GPUs: r.GPUs, Queue: r.Queue,
				DeadlineSeconds: int64(r.Deadline.Seconds()), Env: r.Env}
			err := validateJobRun(&req)
			switch {
			case tc.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.OK && !api.IsCode(err, api.CodeInvalidRequest):
				t.Fatalf("got %v, want invalid_request", err)
			}
		})
	}
}

func TestAnswerLost(t *testing.T) {
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{api.Errorf(api.CodeBrokerTimeout, "x"), true},
		{api.Errorf(api.CodeBrokerUnavailable, "x"), true},
		{api.Errorf(api.CodeBrokerOffline, "x"), true},
		{errors.New("context canceled"), true},
		{api.NotFound(api.CodeClusterNotFound, "x"), false},
		{api.NotFound(api.CodeSecretNotFound, "x"), false},
		{api.BadRequest("x"), false},
	} {
		if got := plan.AnswerLost(tc.err); got != tc.lost {
			t.Errorf("plan.AnswerLost(%v) = %v", tc.err, got)
		}
	}
}
