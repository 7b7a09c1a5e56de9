package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// jobsBroker is a broker speaking the control channel by hand and
// announcing wire.CapJobs: it answers every agent create with a running
// container, and job.run with run (default: accepted on cluster "h200"),
// so a test sees the very job.run and job.cancel the Hub sends and sends
// job.update itself.
type jobsBroker struct {
	creds api.BrokerCredentials
	conn  *wire.Conn

	mu      sync.Mutex
	run     func(wire.JobRun) (any, error)
	runs    []wire.JobRun
	cancels []string
	// cancelErr, when set, is job.cancel's answer; with cancelHang set
	// job.cancel is never answered (until it is closed); with
	// cancelReports the broker reports the Job cancelled before it
	// answers, as a real one does.
	cancelErr     error
	cancelHang    chan struct{}
	cancelReports bool
	// calls are the agent.stop and job.cancel it got, in order.
	calls []string
	// inventory is what its hellos declare.
	inventory []wire.AgentStatus
	tokens    map[string]string // agent ID -> its token from the create
}

func newJobsBroker(t *testing.T, e *testenv.Env, name string, caps []string) *jobsBroker {
	t.Helper()
	creds, err := e.Hub.RegisterBroker(context.Background(), name, hub.BootstrapAdminID, false)
	if err != nil {
		t.Fatal(err)
	}
	e.NeverLogged(creds.Secret)
	jb := &jobsBroker{creds: creds, tokens: map[string]string{}}
	jb.connect(t, e, caps)
	if _, err := e.Admin.ProvideProject(context.Background(), creds.BrokerID, "default"); err != nil {
		t.Fatal(err)
	}
	return jb
}

// connect opens jb's control channel (again) and says hello: a
// reconnect of the same broker.
func (jb *jobsBroker) connect(t *testing.T, e *testenv.Env, caps []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	creds := jb.creds
	h := http.Header{}
	wire.SignHeaders(h, creds.BrokerID, []byte(creds.Secret), wire.SignedRequest{Method: http.MethodGet, Path: connectPath}, time.Now())
	c, _, err := dialControl(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+connectPath, h, wire.Options{})
	if err != nil {
		cancel()
		t.Fatalf("dial: %v", err)
	}
	jb.mu.Lock()
	jb.conn = c
	jb.mu.Unlock()
	c.Handle(wire.MethodAgentCreate, func(_ context.Context, req *wire.Request) (any, error) {
		var s wire.AgentSpec
		if err := req.Decode(&s); err != nil {
			return nil, err
		}
		jb.mu.Lock()
		jb.tokens[s.AgentID] = s.AgentToken
		jb.mu.Unlock()
		return wire.AgentStatus{AgentID: s.AgentID, RunID: s.RunID, ProjectID: s.ProjectID, State: api.ContainerRunning, ObservedAt: time.Now().UnixNano()}, nil
	})
	c.Handle(wire.MethodAgentDelete, func(context.Context, *wire.Request) (any, error) { return struct{}{}, nil })
	c.Handle(wire.MethodAgentStop, func(_ context.Context, req *wire.Request) (any, error) {
		var r wire.AgentRef
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		jb.mu.Lock()
		jb.calls = append(jb.calls, wire.MethodAgentStop+" "+r.AgentID)
		jb.mu.Unlock()
		return wire.AgentStatus{AgentID: r.AgentID, RunID: r.RunID, State: api.ContainerExited, ObservedAt: time.Now().UnixNano()}, nil
	})
	c.Handle(wire.MethodJobRun, func(_ context.Context, req *wire.Request) (any, error) {
		var r wire.JobRun
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		jb.mu.Lock()
		jb.runs = append(jb.runs, r)
		run := jb.run
		jb.mu.Unlock()
		if run != nil {
			return run(r)
		}
		return wire.JobAccepted{Cluster: "h200", Tier: "public", Namespace: "scion-jobs", Name: "scion-job-" + r.Job.ID[:8]}, nil
	})
	c.Handle(wire.MethodJobCancel, func(ctx context.Context, req *wire.Request) (any, error) {
		var r wire.JobRef
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		jb.mu.Lock()
		jb.cancels = append(jb.cancels, r.JobID)
		jb.calls = append(jb.calls, wire.MethodJobCancel+" "+r.JobID)
		cerr, hang, report := jb.cancelErr, jb.cancelHang, jb.cancelReports
		jb.mu.Unlock()
		if hang != nil {
			select { // a broker that never answers
			case <-hang:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}
		if cerr != nil {
			return nil, cerr
		}
		if report {
			// As a real broker: the cancelled report before the answer.
			if err := c.Call(ctx, wire.MethodJobUpdate, wire.JobUpdate{JobID: r.JobID, State: api.JobStateCancelled, Message: "cancelled"}, nil); err != nil {
				return nil, err
			}
		}
		return struct{}{}, nil
	})
	done := make(chan struct{})
	if err := c.Start(ctx, func(error) { close(done) }); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close("done"); cancel(); <-done })
	if caps == nil {
		caps = []string{wire.CapJobs}
	}
	var reply wire.HelloReply
	if err := c.Call(ctx, wire.MethodHello, wire.Hello{ProtocolVersion: wire.ProtocolVersion, BrokerID: creds.BrokerID, Name: creds.Name,
		Version: "test", Runtime: "fake", Capabilities: caps, Inventory: append([]wire.AgentStatus{}, jb.inventory...)}, &reply); err != nil {
		t.Fatalf("hello: %v", err)
	}
	e.WaitBrokerStatus(creds.BrokerID, api.BrokerOnline)
}

func (jb *jobsBroker) setRun(f func(wire.JobRun) (any, error)) {
	jb.mu.Lock()
	jb.run = f
	jb.mu.Unlock()
}

func (jb *jobsBroker) gotRuns() []wire.JobRun {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return append([]wire.JobRun(nil), jb.runs...)
}

// creates is how many agent creates the broker received.
func (jb *jobsBroker) creates() int {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return len(jb.tokens)
}

func (jb *jobsBroker) token(id string) string {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return jb.tokens[id]
}

func (jb *jobsBroker) update(t *testing.T, u wire.JobUpdate) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return jb.conn.Call(ctx, wire.MethodJobUpdate, u, nil)
}

// startOn creates and starts an agent on broker jb in the default
// project as c.
func startOn(t *testing.T, c *client.Client, jb *jobsBroker, name string) *api.Agent {
	t.Helper()
	a, err := c.CreateAgent(context.Background(), api.CreateAgentRequest{Name: name, Project: "default", Broker: jb.creds.BrokerID, Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatalf("create agent: %v", err)
	}
	return a
}

var jobReq = api.JobRunRequest{Image: "ghcr.io/x/measure:1", Command: []string{"python", "measure.py"}, GPUs: 1}

// TestJobLifecycle: a run writes a pending row, the broker's answer
// fills where it goes, job.update moves it through running to
// succeeded with a result, logs and a trace; GET, the lists, logs and
// trace show it; and the finished Job never changes again.
func TestJobLifecycle(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-b", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		req := jobReq
		req.Cluster, req.Env = "h200", map[string]string{"RUNG": "3"}
		j, err := e.Admin.RunJob(ctx, a.ID, "", req)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != api.JobStatePending || j.Cluster != "h200" || j.Tier != "public" || j.Namespace != "scion-jobs" || j.Name == "" ||
			j.BrokerID != jb.creds.BrokerID || j.AgentID != a.ID || j.CreatedBy != "user:"+hub.BootstrapAdminID ||
			j.DeadlineSeconds != int64(api.DefaultJobDeadline.Seconds()) {
			t.Fatalf("job after run: %+v", j)
		}
		if runs := jb.gotRuns(); len(runs) != 1 || runs[0].Job.ID != j.ID || runs[0].Env["RUNG"] != "3" || runs[0].Job.State != api.JobStatePending {
			t.Fatalf("job.run the broker got: %+v", runs)
		}
		if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateRunning, Message: "pod running"}); err != nil {
			t.Fatal(err)
		}
		got, err := e.Admin.GetJob(ctx, j.ID)
		if err != nil || got.State != api.JobStateRunning || got.Message != "pod running" {
			t.Fatalf("after running: %+v %v", got, err)
		}
		logs := strings.Repeat("x", api.MaxJobLogBytes) + "tail-line\n"
		zero := 0
		fin := time.Now().UTC().Truncate(time.Second)
		if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateSucceeded, ExitCode: &zero, FinishedAt: &fin,
			Result: json.RawMessage(`{"tflops":812.5}`), Logs: &logs, Trace: []byte("trace-bytes")}); err != nil {
			t.Fatal(err)
		}
		got, err = e.Admin.GetJob(ctx, j.ID)
		if err != nil || got.State != api.JobStateSucceeded || string(got.Result) != `{"tflops":812.5}` || got.ExitCode == nil ||
			got.LogBytes != api.MaxJobLogBytes || got.TraceBytes != len("trace-bytes") || got.FinishedAt == nil {
			t.Fatalf("after succeeded: %+v %v", got, err)
		}
		l, err := e.Admin.JobLogs(ctx, j.ID)
		if err != nil || len(l) != api.MaxJobLogBytes || !strings.HasSuffix(l, "tail-line\n") {
			t.Fatalf("logs: %d bytes, %v", len(l), err)
		}
		tr, err := e.Admin.JobTrace(ctx, j.ID)
		if err != nil || string(tr) != "trace-bytes" {
			t.Fatalf("trace: %q %v", tr, err)
		}
		for _, list := range []func() (*api.List[api.Job], error){
			func() (*api.List[api.Job], error) { return e.Admin.ListAgentJobs(ctx, a.ID, "", "", 0) },
			func() (*api.List[api.Job], error) { return e.Admin.ListJobs(ctx, client.JobFilter{Agent: a.ID}, "", 0) },
			func() (*api.List[api.Job], error) {
				return e.Admin.ListJobs(ctx, client.JobFilter{Project: "default"}, "", 0)
			},
			func() (*api.List[api.Job], error) { return e.Admin.ListJobs(ctx, client.JobFilter{}, "", 0) },
		} {
			l, err := list()
			if err != nil || len(l.Items) != 1 || l.Items[0].ID != j.ID || l.Items[0].State != api.JobStateSucceeded {
				t.Fatalf("list: %+v %v", l, err)
			}
		}
		// Final: another state is refused, the same one sent again is not.
		apiErr(t, jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateFailed}), http.StatusConflict, api.CodeInvalidPhase)
		if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateSucceeded}); err != nil {
			t.Fatalf("the latest sent again: %v", err)
		}
		if got, _ := e.Admin.GetJob(ctx, j.ID); got.State != api.JobStateSucceeded {
			t.Fatalf("a finished job changed: %+v", got)
		}
		// Cancel of a finished Job.
		_, err = e.Admin.CancelJob(ctx, j.ID)
		apiErr(t, err, http.StatusConflict, api.CodeInvalidPhase)
		if !strings.Contains(metricsText(t, e), `scion_jobs_total{cluster="h200",outcome="succeeded"} 1`) {
			t.Fatal("no scion_jobs_total for the succeeded job on h200")
		}
	})
}

// metricValue is the value of the unlabelled counter or gauge name in the
// Hub's /metrics.
func metricValue(t *testing.T, e *testenv.Env, name string) int {
	t.Helper()
	for _, l := range strings.Split(metricsText(t, e), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return int(v)
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

func metricsText(t *testing.T, e *testenv.Env) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics as the admin: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// TestJobRefusedLeavesNoRow: the broker's refusal (cluster_not_found,
// secret_not_found, invalid_request) is the caller's answer as it is,
// and the ledger keeps nothing of the run. A broker that never answers
// leaves the row in state error naming the cluster asked for.
func TestJobRefusedLeavesNoRow(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		e.Hub.SetJobRunTimeout(time.Second)
		ctx := context.Background()
		jb := newJobsBroker(t, e, "spoke-b", nil)
		a := startOn(t, e.Admin, jb, "measurer")
		for _, tc := range []struct {
			err    *api.Error
			status int
		}{
			{api.NotFound(api.CodeClusterNotFound, "no cluster b200 in profile gpu"), 404},
			{api.NotFound(api.CodeSecretNotFound, "secret SPOKE_KUBECONFIG not found"), 404},
			{api.BadRequest("queue h200 not in cluster"), 400},
		} {
			jb.setRun(func(wire.JobRun) (any, error) { return nil, tc.err })
			req := jobReq
			req.Cluster = "b200"
			_, err := e.Admin.RunJob(ctx, a.ID, "", req)
			apiErr(t, err, tc.status, tc.err.Code)
			if !strings.Contains(err.Error(), tc.err.Message) {
				t.Fatalf("the broker's message is not passed on: %v", err)
			}
			l, err := e.Admin.ListJobs(ctx, client.JobFilter{Agent: a.ID}, "", 0)
			if err != nil || len(l.Items) != 0 {
				t.Fatalf("a refused run left rows: %+v %v", l, err)
			}
		}
		// No answer at all: the row says so.
		release := make(chan struct{})
		defer close(release)
		jb.setRun(func(wire.JobRun) (any, error) { <-release; return nil, errors.New("late") })
		req := jobReq
		req.Cluster = "b200"
		_, err := e.Admin.RunJob(ctx, a.ID, "", req)
		apiErr(t, err, http.StatusGatewayTimeout, api.CodeBrokerTimeout)
		l, err := e.Admin.ListJobs(ctx, client.JobFilter{Agent: a.ID}, "", 0)
		if err != nil || len(l.Items) != 1 || l.Items[0].State != api.JobStateError || l.Items[0].Error == nil || l.Items[0].Error.Cluster != "b200" {
			t.Fatalf("an unanswered run: %+v %v", l, err)
		}
	})
}

// TestJobUpdateOfAnotherBrokerRefused: broker A never writes broker B's
// Job, and an update of an unknown Job or with bad content is refused.
func TestJobUpdateOfAnotherBrokerRefused(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	ja := newJobsBroker(t, e, "spoke-a", nil)
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, ja, "measurer")
	j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	apiErr(t, jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateSucceeded}), http.StatusForbidden, api.CodeForbidden)
	apiErr(t, ja.update(t, wire.JobUpdate{JobID: "0190c3a4-0000-7000-8000-000000000000", State: api.JobStateRunning}), http.StatusNotFound, api.CodeJobNotFound)
	apiErr(t, ja.update(t, wire.JobUpdate{JobID: j.ID, State: "exploded"}), http.StatusBadRequest, api.CodeInvalidRequest)
	apiErr(t, ja.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateSucceeded, Result: json.RawMessage(`{nope`)}), http.StatusBadRequest, api.CodeInvalidRequest)
	if got, _ := e.Admin.GetJob(ctx, j.ID); got.State != api.JobStatePending {
		t.Fatalf("a refused update changed the job: %+v", got)
	}
}

// TestJobCancel: cancel sends job.cancel to the Job's broker; the broker
// reports the state; a cancel again answers the cancelled Job; with the
// broker offline the cancel is queued.
func TestJobCancel(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	j, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CancelJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	jb.mu.Lock()
	cancels := append([]string(nil), jb.cancels...)
	jb.mu.Unlock()
	if len(cancels) != 1 || cancels[0] != j.ID {
		t.Fatalf("job.cancel the broker got: %v", cancels)
	}
	if err := jb.update(t, wire.JobUpdate{JobID: j.ID, State: api.JobStateCancelled, Message: "deleted on its spoke"}); err != nil {
		t.Fatal(err)
	}
	got, err := e.Admin.CancelJob(ctx, j.ID)
	if err != nil || got.State != api.JobStateCancelled {
		t.Fatalf("cancel again: %+v %v", got, err)
	}
	j2, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatal(err)
	}
	_ = jb.conn.Close("going away")
	e.WaitBrokerStatus(jb.creds.BrokerID, api.BrokerOffline)
	// Queued, not refused: TestJobCancelQueuedForOfflineBroker.
	if got, err := e.Admin.CancelJob(ctx, j2.ID); err != nil || got.State != api.JobStateCancelling {
		t.Fatalf("cancel with the broker offline: %+v %v; want it queued, the job cancelling", got, err)
	}
	_, err = e.Admin.RunJob(ctx, a.ID, "", jobReq)
	apiErr(t, err, http.StatusServiceUnavailable, api.CodeBrokerOffline)
}

// TestJobNeedsCapableBroker: a broker that does not announce jobs is
// refused before any row is written.
func TestJobNeedsCapableBroker(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "old", []string{})
	a := startOn(t, e.Admin, jb, "measurer")
	_, err := e.Admin.RunJob(ctx, a.ID, "", jobReq)
	apiErr(t, err, http.StatusNotImplemented, api.CodeUnsupportedOperation)
	if len(jb.gotRuns()) != 0 {
		t.Fatal("job.run sent to a broker without the jobs capability")
	}
}

// TestJobRunBadInput: every bound of a JobRunRequest is 400 naming the
// field, and nothing is sent.
func TestJobRunBadInput(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	big := make([]string, api.MaxJobCommandArgs+1)
	for i := range big {
		big[i] = "a"
	}
	for _, tc := range []struct {
		name  string
		mod   func(*api.JobRunRequest)
		field string
	}{
		{"no image", func(r *api.JobRunRequest) { r.Image = "" }, "image"},
		{"image with a newline", func(r *api.JobRunRequest) { r.Image = "a\nb" }, "image"},
		{"no command", func(r *api.JobRunRequest) { r.Command = nil }, "command"},
		{"too many args", func(r *api.JobRunRequest) { r.Command = big }, "command"},
		{"too many bytes", func(r *api.JobRunRequest) {
			r.Command = []string{strings.Repeat("a", api.MaxJobCommandBytes/2), strings.Repeat("b", api.MaxJobCommandBytes/2+1)}
		}, "command"},
		{"gpus", func(r *api.JobRunRequest) { r.GPUs = api.MaxJobGPUs + 1 }, "gpus"},
		{"negative gpus", func(r *api.JobRunRequest) { r.GPUs = -1 }, "gpus"},
		{"deadline", func(r *api.JobRunRequest) { r.DeadlineSeconds = int64(api.MaxJobDeadline.Seconds()) + 1 }, "deadlineSeconds"},
		{"negative deadline", func(r *api.JobRunRequest) { r.DeadlineSeconds = -5 }, "deadlineSeconds"},
		{"cluster", func(r *api.JobRunRequest) { r.Cluster = "B200_box" }, "cluster"},
		{"queue", func(r *api.JobRunRequest) { r.Queue = "Queue With Spaces" }, "queue"},
		{"env name", func(r *api.JobRunRequest) { r.Env = map[string]string{"1BAD": "x"} }, "env"},
		{"env value", func(r *api.JobRunRequest) {
			r.Env = map[string]string{"OK": strings.Repeat("v", api.MaxJobEnvValueBytes+1)}
		}, "env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := jobReq
			tc.mod(&req)
			_, err := e.Admin.RunJob(ctx, a.ID, "", req)
			apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("the error does not name %s: %v", tc.field, err)
			}
		})
	}
	if len(jb.gotRuns()) != 0 {
		t.Fatal("a refused request reached the broker")
	}
}

// TestJobAccess: the agent itself runs and reads its Jobs; an agent of
// another project can neither run on nor read them (404, so IDs do not
// leak); a member who cannot act on the agent gets 403 on run and 404 on
// the Job.
func TestJobAccess(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jb := newJobsBroker(t, e, "spoke-b", nil)
	a := startOn(t, e.Admin, jb, "measurer")
	self := client.New(e.URL, jb.token(a.ID))
	j, err := self.RunJob(ctx, a.ID, "", jobReq)
	if err != nil {
		t.Fatalf("the agent runs its own job: %v", err)
	}
	if j.CreatedBy != "agent:"+a.ID {
		t.Fatalf("createdBy %q", j.CreatedBy)
	}
	if _, err := self.GetJob(ctx, j.ID); err != nil {
		t.Fatalf("the agent reads its job: %v", err)
	}
	if l, err := self.ListJobs(ctx, client.JobFilter{}, "", 0); err != nil || len(l.Items) != 1 {
		t.Fatalf("the agent lists its jobs: %+v %v", l, err)
	}
	// An agent of another project.
	q, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.ProvideProject(ctx, jb.creds.BrokerID, q.ID); err != nil {
		t.Fatal(err)
	}
	oa, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "outsider", Project: q.ID, Broker: jb.creds.BrokerID, Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	other := client.New(e.URL, jb.token(oa.ID))
	_, err = other.RunJob(ctx, a.ID, "", jobReq)
	apiErr(t, err, http.StatusNotFound, api.CodeAgentNotFound)
	_, err = other.GetJob(ctx, j.ID)
	apiErr(t, err, http.StatusNotFound, api.CodeJobNotFound)
	_, err = other.CancelJob(ctx, j.ID)
	apiErr(t, err, http.StatusNotFound, api.CodeJobNotFound)
	_, err = other.JobLogs(ctx, j.ID)
	apiErr(t, err, http.StatusNotFound, api.CodeJobNotFound)
	_, err = other.ListJobs(ctx, client.JobFilter{Agent: a.ID}, "", 0)
	apiErr(t, err, http.StatusNotFound, api.CodeAgentNotFound)
	_, err = other.ListJobs(ctx, client.JobFilter{Project: "default"}, "", 0)
	apiErr(t, err, http.StatusNotFound, api.CodeProjectNotFound)
	if l, err := other.ListJobs(ctx, client.JobFilter{}, "", 0); err != nil || len(l.Items) != 0 {
		t.Fatalf("the outsider lists its own (none): %+v %v", l, err)
	}
	// A member who neither created the agent nor owns its project.
	mem := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
	_, err = mem.RunJob(ctx, a.ID, "", jobReq)
	apiErr(t, err, http.StatusForbidden, api.CodeForbidden)
	_, err = mem.GetJob(ctx, j.ID)
	apiErr(t, err, http.StatusNotFound, api.CodeJobNotFound)
	_, err = mem.ListJobs(ctx, client.JobFilter{Project: "default"}, "", 0)
	apiErr(t, err, http.StatusForbidden, api.CodeForbidden)
	_, err = mem.ListJobs(ctx, client.JobFilter{}, "", 0)
	apiErr(t, err, http.StatusForbidden, api.CodeForbidden)
	if msg := api.AsError(err).Message; !strings.HasPrefix(msg, "listing every Job needs the hub admin role; pass ?project= or ?agent=") || strings.Contains(msg, "  ") {
		t.Errorf("listing every Job as a member: %q", msg)
	}
	// Unknown and malformed IDs are the same 404.
	for _, id := range []string{"0190c3a4-0000-7000-8000-000000000000", "not-a-uuid"} {
		_, err = e.Admin.GetJob(ctx, id)
		apiErr(t, err, http.StatusNotFound, api.CodeJobNotFound)
	}
	// The ledger outlives the agent: its creator (the agent, gone) no
	// longer reaches it, the admin does.
	if err := e.Admin.DeleteAgent(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Admin.GetJob(ctx, j.ID); err != nil || got.ID != j.ID {
		t.Fatalf("a job of a deleted agent: %+v %v", got, err)
	}
}

// TestHubStartExpiresPendingJobs: a row left pending by a Hub that
// stopped before its broker answered is marked error at the next start;
// a fresh pending row is left alone.
func TestHubStartExpiresPendingJobs(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	old, fresh := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	for id, at := range map[string]time.Time{old: time.Now().UTC().Add(-time.Hour), fresh: time.Now().UTC()} {
		if err := e.Store.CreateJob(ctx, &store.Job{ID: id, ProjectID: e.ProjectID, AgentID: uuid.NewString(), BrokerID: uuid.NewString(),
			Cluster: "b200", Image: "busybox", Command: []string{"true"}, DeadlineSeconds: 60, State: api.JobStatePending,
			CreatedBy: "user:x", CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	e.RestartHub()
	got, err := e.Admin.GetJob(ctx, old)
	if err != nil || got.State != api.JobStateError || !strings.Contains(got.Message, "restarted") {
		t.Fatalf("old pending job: %+v %v", got, err)
	}
	if got, err := e.Admin.GetJob(ctx, fresh); err != nil || got.State != api.JobStatePending {
		t.Fatalf("fresh pending job: %+v %v", got, err)
	}
}
