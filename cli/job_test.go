package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// fakeJobsHub serves the Job routes the CLI calls: a run answers the
// first of states, and each GET of the Job the next one (the last one
// for ever after).
type fakeJobsHub struct {
	mu     sync.Mutex
	states []api.Job
	gets   int
	// drops is how many GETs of the Job are cut (the connection closed
	// unanswered, as by a Hub restarting) before any is answered.
	drops  int
	runs   []api.JobRunRequest
	agents []string
	who    api.Whoami
	// logs answers GET .../logs: the one of the Job state last served.
	logs []string
}

func (f *fakeJobsHub) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/auth/whoami":
			_ = json.NewEncoder(w).Encode(f.who)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/jobs"):
			var req api.JobRunRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			f.runs = append(f.runs, req)
			f.agents = append(f.agents, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/agents/"), "/jobs"))
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(f.states[0])
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/logs") && len(f.logs) > 0:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(f.logs[min(f.gets, len(f.logs)-1)]))
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/jobs/") && f.drops > 0:
			f.drops--
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/jobs/"):
			f.gets++
			_ = json.NewEncoder(w).Encode(f.states[min(f.gets, len(f.states)-1)])
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"no route"}}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sent returns the run requests and their agents, under the lock.
func (f *fakeJobsHub) sent() ([]api.JobRunRequest, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.JobRunRequest(nil), f.runs...), append([]string(nil), f.agents...)
}

func (f *fakeJobsHub) setWho(w api.Whoami) {
	f.mu.Lock()
	f.who = w
	f.mu.Unlock()
}

func jobIn(st api.JobState, msg string) api.Job {
	return api.Job{ID: "0190c3a4-5e6f-7a00-8000-1234567890ab", AgentID: "ag", Cluster: "h200", Tier: "public", State: st, Message: msg,
		Image: "busybox", Command: []string{"true"}, CreatedAt: time.Now()}
}

func fastPoll(t *testing.T) {
	old := jobPoll
	jobPoll = 5 * time.Millisecond
	t.Cleanup(func() { jobPoll = old })
}

// TestJobRunWaitsForTheResult: `scion job run` prints a progress line per
// change to stderr and the result JSON to stdout, exit 0 on succeeded;
// failed exits 1; an error prints the typed {"status":"error"} JSON and
// exits 1; --detach prints the Job and returns at once.
func TestJobRunWaitsForTheResult(t *testing.T) {
	setHome(t)
	fastPoll(t)
	t.Setenv(api.EnvAgentID, "")
	zero, three := 0, 3
	ok := jobIn(api.JobStateSucceeded, "pod succeeded")
	ok.ExitCode, ok.Result = &zero, json.RawMessage(`{"tflops":812.5}`)
	failed := jobIn(api.JobStateFailed, "pod failed")
	failed.ExitCode = &three
	errored := jobIn(api.JobStateError, "spoke unreachable")
	errored.Error = &api.JobError{Status: "error", Cluster: "b200", Tier: "bastion", Message: "dial tcp: i/o timeout"}
	for _, tc := range []struct {
		name   string
		states []api.Job
		args   []string
		code   int
		out    string
		errs   []string
	}{
		{"succeeded", []api.Job{jobIn(api.JobStatePending, ""), jobIn(api.JobStateQueued, "waiting for admission"), jobIn(api.JobStateQueued, "waiting for admission"),
			jobIn(api.JobStateRunning, "pod running"), ok}, nil, 0, `"tflops": 812.5`,
			[]string{"h200: pending", "queued: waiting for admission", "running: pod running", "succeeded: pod succeeded"}},
		{"failed", []api.Job{jobIn(api.JobStatePending, ""), failed}, nil, 1, "", []string{"failed: pod failed", "exit code 3"}},
		{"error", []api.Job{jobIn(api.JobStatePending, ""), errored}, nil, 1, `"status": "error"`, []string{"error: spoke unreachable"}},
		{"detach", []api.Job{jobIn(api.JobStatePending, "")}, []string{"--detach"}, 0, "pending", nil},
		{"json", []api.Job{jobIn(api.JobStatePending, ""), ok}, []string{"-o", "json"}, 0, `"state": "succeeded"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeJobsHub{states: tc.states}
			srv := f.serve(t)
			useHub(t, "fake", srv.URL, "scu_x")
			args := append([]string{"job", "run", "--agent", "worker", "--cluster", "h200", "--image", "busybox", "--gpus", "2",
				"--deadline", "30m", "--env", "RUNG=3"}, tc.args...)
			r := runCLI(t, "", append(args, "--", "python", "m.py")...)
			if r.code != tc.code || !strings.Contains(r.out, tc.out) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", r.code, tc.code, r.out, r.err)
			}
			for _, want := range tc.errs {
				if !strings.Contains(r.err, want) {
					t.Fatalf("stderr lacks %q:\n%s", want, r.err)
				}
			}
			if strings.Count(r.err, "waiting for admission") > 1 {
				t.Fatalf("a repeated state printed twice:\n%s", r.err)
			}
			runs, agents := f.sent()
			req := runs[0]
			if req.Cluster != "h200" || req.GPUs != 2 || req.DeadlineSeconds != 1800 || req.Env["RUNG"] != "3" ||
				strings.Join(req.Command, " ") != "python m.py" || agents[0] != "worker" {
				t.Fatalf("request %+v to %v", req, agents)
			}
		})
	}
}

// TestJobRunAgentDefault: inside an agent the Job is the agent's own
// (SCION_AGENT_ID, else the token's agent); outside one --agent is
// needed (a usage error).
func TestJobRunAgentDefault(t *testing.T) {
	setHome(t)
	fastPoll(t)
	f := &fakeJobsHub{states: []api.Job{jobIn(api.JobStatePending, "")}}
	srv := f.serve(t)
	useHub(t, "fake", srv.URL, "scu_x")
	run := func() result {
		return runCLI(t, "", "job", "run", "--image", "busybox", "--detach", "--", "true")
	}
	t.Setenv(api.EnvAgentID, "0190c3a4-aaaa-7000-8000-000000000001")
	if r := run(); r.code != 0 {
		t.Fatalf("%d %s", r.code, r.err)
	}
	if _, agents := f.sent(); agents[0] != "0190c3a4-aaaa-7000-8000-000000000001" {
		t.Fatalf("agents %v", agents)
	}
	t.Setenv(api.EnvAgentID, "")
	self := "0190c3a4-bbbb-7000-8000-000000000002"
	f.setWho(api.Whoami{Kind: "agent", ID: self})
	if r := run(); r.code != 0 {
		t.Fatalf("%d %s", r.code, r.err)
	}
	if _, agents := f.sent(); agents[1] != self {
		t.Fatalf("agents %v", agents)
	}
	f.setWho(api.Whoami{Kind: "user", ID: "u"})
	if r := run(); r.code != exitUsage || !strings.Contains(r.err, "--agent") {
		t.Fatalf("outside an agent: %d %s", r.code, r.err)
	}
	for _, bad := range [][]string{
		{"job", "run", "--agent", "a", "--", "true"},                                         // no image
		{"job", "run", "--agent", "a", "--image", "x", "true"},                               // no --
		{"job", "run", "--agent", "a", "--image", "x", "--deadline", "0s", "--", "true"},     // deadline
		{"job", "run", "--agent", "a", "--image", "x", "--env", "NOEQUALS", "--", "true"},    // env
		{"hub", "secret", "set", "X", "--broker", "b", "--project", "p", "--from-file", "f"}, // both scopes
	} {
		if r := runCLI(t, "", bad...); r.code != exitUsage {
			t.Errorf("scion %s: exit %d, want 2: %s", strings.Join(bad, " "), r.code, r.err)
		}
	}
}

// TestJobCommandsAgainstAHub: list, show, logs (with --trace) and cancel
// against a real Hub, with a Job row written in its store; and the
// broker-scoped secret commands, with --from-file keeping a multi-line
// kubeconfig as it is.
func TestJobCommandsAgainstAHub(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1})
	useHub(t, "team", e.URL, e.AdminToken)
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "worker", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	id := writeJob(t, e, a, api.JobStateSucceeded)
	if r := mustRun(t, "job", "list", "--agent", "worker"); !strings.Contains(r.out, id) || !strings.Contains(r.out, "succeeded") {
		t.Fatalf("list: %s", r.out)
	}
	var js []api.Job
	if r := mustRun(t, "job", "list", "--project", "default", "-o", "json"); json.Unmarshal([]byte(r.out), &js) != nil || len(js) != 1 {
		t.Fatalf("list json: %s", r.out)
	}
	if r := mustRun(t, "job", "show", id); !strings.Contains(r.out, "h200") || !strings.Contains(r.out, `{"ok":true}`) {
		t.Fatalf("show: %s", r.out)
	}
	trace := filepath.Join(t.TempDir(), "trace.bin")
	if r := mustRun(t, "job", "logs", id, "--trace", trace); r.out != "line 1\nline 2\n" {
		t.Fatalf("logs: %q", r.out)
	}
	if b, err := os.ReadFile(trace); err != nil || string(b) != "TRACE" {
		t.Fatalf("trace: %q %v", b, err)
	}
	if r := runCLI(t, "", "job", "cancel", id); r.code != exitError || !strings.Contains(r.err, "invalid_phase") {
		t.Fatalf("cancel of a finished job: %d %s", r.code, r.err)
	}
	if r := runCLI(t, "", "job", "show", "0190c3a4-0000-7000-8000-000000000000"); r.code != exitError || !strings.Contains(r.err, "job_not_found") {
		t.Fatalf("show unknown: %d %s", r.code, r.err)
	}

	kc := filepath.Join(t.TempDir(), "b200.kubeconfig")
	value := "apiVersion: v1\nkind: Config\n# token-for-the-spoke\n"
	if err := os.WriteFile(kc, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	e.NeverLogged(value)
	mustRun(t, "hub", "secret", "set", "SPOKE_B200", "--broker", "b1", "--from-file", kc)
	if r := mustRun(t, "hub", "secret", "list", "--broker", "b1"); !strings.Contains(r.out, "SPOKE_B200") || strings.Contains(r.out, "token-for") {
		t.Fatalf("list: %s", r.out)
	}
	b := e.Brokers()[0]
	if v, err := wire.FetchBrokerSecret(ctx, nil, e.URL, b.ID, []byte(b.Secret), "SPOKE_B200"); err != nil || v != value {
		t.Fatalf("the broker reads %q (%v), want the file as it is", v, err)
	}
	mustRun(t, "hub", "secret", "delete", "SPOKE_B200", "--broker", "b1")
	if r := mustRun(t, "hub", "secret", "list", "--broker", "b1", "-o", "json"); strings.TrimSpace(r.out) != "[]" {
		t.Fatalf("after delete: %s", r.out)
	}
}

// writeJob writes a Job row of agent a on its broker, in state st, with
// a result, logs and a trace.
func writeJob(t *testing.T, e *testenv.Env, a *api.Agent, st api.JobState) string {
	t.Helper()
	now := time.Now().UTC()
	j := &store.Job{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: a.ProjectID, AgentID: a.ID, BrokerID: a.BrokerID, Cluster: "h200",
		Tier: "public", Image: "busybox", Command: []string{"true"}, DeadlineSeconds: 60, State: st, CreatedBy: "user:admin",
		CreatedAt: now, UpdatedAt: now, Result: json.RawMessage(`{"ok":true}`), Logs: "line 1\nline 2\n", LogBytes: 14,
		Trace: []byte("TRACE"), TraceBytes: 5}
	if err := e.Store.CreateJob(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// TestJobRunWaitSurvivesHubRestart: a Hub restarting while `scion job
// run` waits (its connections cut, nothing answered) is waited out: the
// Job goes on, and the command still ends with its result.
func TestJobRunWaitSurvivesHubRestart(t *testing.T) {
	setHome(t)
	fastPoll(t)
	t.Setenv(api.EnvAgentID, "")
	zero := 0
	ok := jobIn(api.JobStateSucceeded, "pod succeeded")
	ok.ExitCode, ok.Result = &zero, json.RawMessage(`{"tflops":812.5}`)
	f := &fakeJobsHub{states: []api.Job{jobIn(api.JobStatePending, ""), ok}, drops: 3}
	srv := f.serve(t)
	useHub(t, "fake", srv.URL, "scu_x")
	r := runCLI(t, "", "job", "run", "--agent", "worker", "--image", "busybox", "--", "true")
	if r.code != 0 || !strings.Contains(r.out, `"tflops": 812.5`) || !strings.Contains(r.err, "retrying") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
	}
}

// TestJobRunLogs: with --logs the Job's log is printed to stderr as it
// grows, each line once; without, a Job that did not succeed shows the
// last lines of its log, and the result stays alone on stdout.
func TestJobRunLogs(t *testing.T) {
	setHome(t)
	fastPoll(t)
	t.Setenv(api.EnvAgentID, "")
	at := func(st api.JobState, n int, logBytes int) api.Job {
		j := jobIn(st, "")
		j.LogBytes, j.UpdatedAt = logBytes, time.Unix(int64(1000+n), 0)
		return j
	}
	zero, three := 0, 3
	ok := at(api.JobStateSucceeded, 3, 12)
	ok.ExitCode, ok.Result = &zero, json.RawMessage(`{"ok":true}`)
	f := &fakeJobsHub{states: []api.Job{at(api.JobStatePending, 0, 0), at(api.JobStateRunning, 1, 6), at(api.JobStateRunning, 2, 12), ok},
		logs: []string{"", "step1\n", "step1\nstep2\n", "step1\nstep2\n"}}
	useHub(t, "fake", f.serve(t).URL, "scu_x")
	r := runCLI(t, "", "job", "run", "--agent", "worker", "--image", "busybox", "--logs", "--", "true")
	if r.code != 0 || strings.Count(r.err, "step1") != 1 || strings.Count(r.err, "step2") != 1 || strings.Contains(r.out, "step") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
	}
	failed := at(api.JobStateFailed, 2, 30)
	failed.ExitCode = &three
	f = &fakeJobsHub{states: []api.Job{at(api.JobStatePending, 0, 0), failed}, logs: []string{"", "line1\nTraceback: boom\n"}}
	useHub(t, "fake", f.serve(t).URL, "scu_x")
	r = runCLI(t, "", "job", "run", "--agent", "worker", "--image", "busybox", "--", "true")
	if r.code != 1 || !strings.Contains(r.err, "the last lines of its log:\nline1\nTraceback: boom\n") {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.err)
	}
}
