package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"
)

// The Job commands against a real Hub whose broker runs delegated Jobs
// (testenv.Options.Jobs): Hub, broker and the control channel are the
// real ones, and the test plays the spoke cluster (testenv.JobSpoke),
// making each Job progress and end.

// jobsHub starts a Hub with broker b1 running Jobs, signs the CLI in as
// the admin and starts agent "worker".
func jobsHub(t *testing.T) (*testenv.Env, *api.Agent, *testenv.JobSpoke) {
	t.Helper()
	setHome(t)
	fastPoll(t)
	t.Setenv(api.EnvAgentID, "")
	e := newHub(t, testenv.Options{Brokers: 1, Jobs: true, MaxBackoff: 100 * time.Millisecond})
	useHub(t, "team", e.URL, e.AdminToken)
	a, err := e.Admin.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "worker", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	return e, a, e.Brokers()[0].Spoke
}

func fastPoll(t *testing.T) {
	old := jobPoll
	jobPoll = 5 * time.Millisecond
	t.Cleanup(func() { jobPoll = old })
}

// syncBuffer is a buffer the CLI writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cliRun is a CLI run in the background: the test drives the Job while
// the command waits for it.
type cliRun struct {
	out, err syncBuffer
	done     chan struct{}
	code     int
}

func startCLI(t *testing.T, args ...string) *cliRun {
	t.Helper()
	r := &cliRun{done: make(chan struct{})}
	root := NewRoot(Daemons{})
	root.SetArgs(args)
	root.SetOut(&r.out)
	root.SetErr(&r.err)
	root.SetIn(strings.NewReader(""))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(r.done)
		r.code = run(ctx, root)
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// waitErr waits until the command printed want to stderr.
func (r *cliRun) waitErr(t *testing.T, want string) {
	t.Helper()
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		select {
		case <-r.done:
			if !strings.Contains(r.err.String(), want) {
				t.Fatalf("the command ended (exit %d) without printing %q\nstdout: %s\nstderr: %s", r.code, want, r.out.String(), r.err.String())
			}
		default:
		}
		if !strings.Contains(r.err.String(), want) {
			return fmt.Errorf("stderr lacks %q:\n%s", want, r.err.String())
		}
		return nil
	})
}

// result waits for the command's end.
func (r *cliRun) result(t *testing.T) result {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the command did not end\nstdout: %s\nstderr: %s", r.out.String(), r.err.String())
	}
	return result{r.out.String(), r.err.String(), r.code}
}

// submitted waits for the spoke's next submit (after the n it had) and
// returns it.
func submitted(t *testing.T, spoke *testenv.JobSpoke, n int) jobs.Spec {
	t.Helper()
	return spoke.WaitSubmits(t, n+1)[n]
}

// pollJob waits until the CLI has read Job id from the Hub after the Hub
// stored what cond checks: what it prints next reflects that row.
func pollJob(t *testing.T, e *testenv.Env, id string, cond func(*api.Job) error) {
	t.Helper()
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		j, err := e.Admin.GetJob(context.Background(), id)
		if err != nil {
			return err
		}
		return cond(j)
	})
	const route = "GET /api/v1/jobs/{job}"
	n := routeRequests(t, e, route) // the admin's reads included
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		if routeRequests(t, e, route) <= n {
			return fmt.Errorf("the CLI has not read job %s again", id)
		}
		return nil
	})
}

func logsOf(s string) *string { return &s }

// TestJobRunWaitsForTheResult: `scion job run` prints a progress line per
// change to stderr and the result JSON to stdout, exit 0 on succeeded;
// failed exits 1; an error prints the typed {"status":"error"} JSON and
// exits 1; --detach prints the Job and returns at once. The broker
// submits what the command line says, for the agent it names.
func TestJobRunWaitsForTheResult(t *testing.T) {
	e, worker, spoke := jobsHub(t)
	for _, tc := range []struct {
		name  string
		args  []string
		drive func(t *testing.T, r *cliRun, id string)
		// submitErr fails the broker's submit to the spoke.
		submitErr error
		code      int
		out       string
		errs      []string
	}{
		{"succeeded", nil, func(t *testing.T, r *cliRun, id string) {
			spoke.Report(id, jobs.Progress{State: api.JobStateQueued, Message: "waiting for admission"})
			r.waitErr(t, "queued: waiting for admission")
			// The same state again (with a log snapshot, which tells
			// that the Hub has it) is not printed again.
			spoke.Report(id, jobs.Progress{State: api.JobStateQueued, Message: "waiting for admission", Logs: logsOf("pulling\n")})
			pollJob(t, e, id, func(j *api.Job) error {
				if j.LogBytes == 0 {
					return fmt.Errorf("job %s: the repeated report not stored yet", id)
				}
				return nil
			})
			spoke.Report(id, jobs.Progress{State: api.JobStateRunning, Message: "pod running"})
			r.waitErr(t, "running: pod running")
			spoke.Succeed(id, `{"tflops":812.5}`, "")
		}, nil, 0, `"tflops": 812.5`, []string{"h200: pending", "queued: waiting for admission", "running: pod running", "succeeded: pod succeeded"}},
		{"failed", nil, func(t *testing.T, _ *cliRun, id string) {
			spoke.Fail(id, 3, "")
		}, nil, 1, "", []string{"failed: pod failed", "exit code 3"}},
		{"error", nil, func(t *testing.T, _ *cliRun, id string) {
			spoke.Report(id, jobs.Progress{State: api.JobStateError, Message: "spoke unreachable",
				Error: &api.JobError{Status: "error", Cluster: "h200", Tier: "public", Message: "dial tcp: i/o timeout"}})
		}, nil, 1, `"message": "dial tcp: i/o timeout"`, []string{"error: spoke unreachable"}},
		{"not submitted", nil, nil, errors.New("admission webhook denied the request"), 1,
			`"message": "submit: admission webhook denied the request"`, []string{"error: not submitted"}},
		{"detach", []string{"--detach"}, nil, nil, 0, "pending", nil},
		{"json", []string{"-o", "json"}, func(t *testing.T, _ *cliRun, id string) {
			spoke.Succeed(id, `{"tflops":812.5}`, "")
		}, nil, 0, `"state": "succeeded"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(spoke.Submits())
			spoke.FailSubmits(tc.submitErr)
			defer spoke.FailSubmits(nil)
			args := append([]string{"job", "run", "--agent", "worker", "--cluster", "h200", "--image", "busybox", "--gpus", "2",
				"--deadline", "30m", "--env", "RUNG=3"}, tc.args...)
			r := startCLI(t, append(args, "--", "python", "m.py")...)
			s := submitted(t, spoke, n)
			if s.Cluster != "h200" || s.GPUs != 2 || s.Deadline != 30*time.Minute || s.Env["RUNG"] != "3" ||
				strings.Join(s.Command, " ") != "python m.py" || s.AgentID != worker.ID || s.Image != "busybox" {
				t.Fatalf("submitted %+v, want the command line's Job for agent %s", s, worker.ID)
			}
			if tc.drive != nil {
				r.waitErr(t, "on h200: pending")
				tc.drive(t, r, s.JobID)
			}
			res := r.result(t)
			if res.code != tc.code || !strings.Contains(res.out, tc.out) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", res.code, tc.code, res.out, res.err)
			}
			for _, want := range tc.errs {
				if !strings.Contains(res.err, want) {
					t.Fatalf("stderr lacks %q:\n%s", want, res.err)
				}
			}
			if strings.Count(res.err, "waiting for admission") > 1 {
				t.Fatalf("a repeated state printed twice:\n%s", res.err)
			}
			if tc.code == 1 && tc.out != "" && !strings.Contains(res.out, `"status": "error"`) {
				t.Fatalf("the typed error lacks its status:\n%s", res.out)
			}
		})
	}
}

// TestJobRunAgentDefault: inside an agent the Job is the agent's own
// (SCION_AGENT_ID, else the token's agent); outside one --agent is
// needed (a usage error).
func TestJobRunAgentDefault(t *testing.T) {
	e, worker, spoke := jobsHub(t)
	self, err := e.Admin.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "self", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	run := func() result {
		return runCLI(t, "", "job", "run", "--cluster", "h200", "--image", "busybox", "--detach", "--", "true")
	}
	t.Setenv(api.EnvAgentID, worker.ID)
	if r := run(); r.code != 0 {
		t.Fatalf("%d %s", r.code, r.err)
	}
	if s := submitted(t, spoke, 0); s.AgentID != worker.ID {
		t.Fatalf("with %s set: the Job is agent %s's, want %s's", api.EnvAgentID, s.AgentID, worker.ID)
	}
	t.Setenv(api.EnvAgentID, "")
	useHub(t, "team", e.URL, agentTokenOf(t, e, self.ID))
	if r := run(); r.code != 0 {
		t.Fatalf("%d %s", r.code, r.err)
	}
	if s := submitted(t, spoke, 1); s.AgentID != self.ID {
		t.Fatalf("with the agent's token: the Job is agent %s's, want %s's", s.AgentID, self.ID)
	}
	useHub(t, "team", e.URL, e.AdminToken)
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
	if s := spoke.Submits(); len(s) != 2 {
		t.Fatalf("the spoke saw %d submits, want the 2 runs", len(s))
	}
}

// TestJobCommandsAgainstAHub: list, show, logs (with --trace) and cancel
// of Jobs run through a real Hub and broker; and the broker-scoped
// secret commands, with --from-file keeping a multi-line kubeconfig as
// it is.
func TestJobCommandsAgainstAHub(t *testing.T) {
	e, _, spoke := jobsHub(t)
	ctx := context.Background()
	detach := func(n int) string {
		t.Helper()
		var j api.Job
		if r := mustRun(t, "job", "run", "--agent", "worker", "--cluster", "h200", "--image", "busybox", "--detach", "-o", "json", "--", "true"); json.Unmarshal([]byte(r.out), &j) != nil {
			t.Fatalf("run: %s", r.out)
		}
		if s := submitted(t, spoke, n); s.JobID != j.ID {
			t.Fatalf("submitted %s, want %s", s.JobID, j.ID)
		}
		return j.ID
	}
	id := detach(0)
	zero := 0
	now := time.Now().UTC()
	spoke.Report(id, jobs.Progress{State: api.JobStateSucceeded, Message: "pod succeeded", StartedAt: &now, FinishedAt: &now, ExitCode: &zero,
		Result: []byte(`{"ok":true}`), Logs: logsOf("line 1\nline 2\n"), Trace: []byte("TRACE")})
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		if r := runCLI(t, "", "job", "show", id); !strings.Contains(r.out, "succeeded") {
			return fmt.Errorf("show: %s %s", r.out, r.err)
		}
		return nil
	})
	if r := mustRun(t, "job", "list", "--agent", "worker"); !strings.Contains(r.out, id) || !strings.Contains(r.out, "succeeded") {
		t.Fatalf("list: %s", r.out)
	}
	var js []api.Job
	if r := mustRun(t, "job", "list", "--project", "default", "-o", "json"); json.Unmarshal([]byte(r.out), &js) != nil || len(js) != 1 {
		t.Fatalf("list json: %s", r.out)
	}
	if r := mustRun(t, "job", "show", id); !strings.Contains(r.out, "h200") || !strings.Contains(r.out, "scion-jobs") || !strings.Contains(r.out, `{"ok":true}`) {
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
	// A running Job's cancel reaches its spoke: the broker deletes it
	// there and reports it cancelled.
	running := detach(1)
	spoke.Report(running, jobs.Progress{State: api.JobStateRunning, Message: "pod running", StartedAt: &now})
	if r := mustRun(t, "job", "cancel", running); !strings.Contains(r.out, "job "+running) {
		t.Fatalf("cancel: %s", r.out)
	}
	spoke.WaitCancelled(t, running)
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		if r := runCLI(t, "", "job", "show", running, "-o", "json"); !strings.Contains(r.out, `"state": "cancelled"`) {
			return fmt.Errorf("show after cancel: %s %s", r.out, r.err)
		}
		return nil
	})

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

// TestJobRunWaitSurvivesHubRestart: a Hub restarting while `scion job
// run` waits (its connections cut, nothing answered, then a new Hub over
// the same store) is waited out: the Job goes on, its broker reports its
// end to the new Hub, and the command still ends with its result.
func TestJobRunWaitSurvivesHubRestart(t *testing.T) {
	e, _, spoke := jobsHub(t)
	r := startCLI(t, "job", "run", "--agent", "worker", "--cluster", "h200", "--image", "busybox", "--", "true")
	id := submitted(t, spoke, 0).JobID
	spoke.Report(id, jobs.Progress{State: api.JobStateRunning, Message: "pod running"})
	r.waitErr(t, "running: pod running")
	e.StopHub()
	r.waitErr(t, "(retrying)")
	spoke.Succeed(id, `{"tflops":812.5}`, "") // reported once a Hub is back
	e.StartHub()
	res := r.result(t)
	if res.code != 0 || !strings.Contains(res.out, `"tflops": 812.5`) || !strings.Contains(res.err, "succeeded: pod succeeded") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.code, res.out, res.err)
	}
	if s := spoke.Submits(); len(s) != 1 {
		t.Fatalf("the spoke saw %d submits, want 1", len(s))
	}
}

// TestJobRunLogs: with --logs the Job's log is printed to stderr as it
// grows, each line once; without, a Job that did not succeed shows the
// last lines of its log, and the result stays alone on stdout.
func TestJobRunLogs(t *testing.T) {
	_, _, spoke := jobsHub(t)
	r := startCLI(t, "job", "run", "--agent", "worker", "--cluster", "h200", "--image", "busybox", "--logs", "--", "true")
	id := submitted(t, spoke, 0).JobID
	spoke.Report(id, jobs.Progress{State: api.JobStateRunning, Message: "pod running", Logs: logsOf("step1\n")})
	r.waitErr(t, "step1\n")
	spoke.Report(id, jobs.Progress{State: api.JobStateRunning, Message: "pod running", Logs: logsOf("step1\nstep2\n")})
	r.waitErr(t, "step2\n")
	spoke.Succeed(id, `{"ok":true}`, "step1\nstep2\n")
	res := r.result(t)
	if res.code != 0 || strings.Count(res.err, "step1") != 1 || strings.Count(res.err, "step2") != 1 || strings.Contains(res.out, "step") ||
		!strings.Contains(res.out, `"ok": true`) {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.code, res.out, res.err)
	}

	r = startCLI(t, "job", "run", "--agent", "worker", "--cluster", "h200", "--image", "busybox", "--", "true")
	id = submitted(t, spoke, 1).JobID
	r.waitErr(t, "on h200: pending")
	spoke.Fail(id, 3, "line1\nTraceback: boom\n")
	res = r.result(t)
	if res.code != 1 || !strings.Contains(res.err, "the last lines of its log:\nline1\nTraceback: boom\n") {
		t.Fatalf("exit %d\nstderr: %s", res.code, res.err)
	}
}
