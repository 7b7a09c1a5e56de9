package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// newJob is a pending Job with only the fields a create needs.
func newJob(t testing.TB, s store.Store, projectID, agentID, brokerID string) *store.Job {
	t.Helper()
	j := &store.Job{ID: dbutil.NewID(), ProjectID: projectID, AgentID: agentID, BrokerID: brokerID, Cluster: "b200",
		Image: "busybox", State: api.JobStatePending}
	must(t, s.CreateJob(t.Context(), j))
	return j
}

// fullJob has every field set, the blobs with bytes text columns would
// refuse (NUL, invalid UTF-8) and a zero exit code (set, not absent).
func fullJob(projectID string) *store.Job {
	started := oddTime()
	finished := started.Add(time.Minute)
	exit := 0
	return &store.Job{
		ID: dbutil.NewID(), ProjectID: projectID, AgentID: "agent-1", BrokerID: "broker-1", Cluster: "b200",
		Tier: "bastion", Namespace: "ml", Name: "scion-job-abc", Image: "ghcr.io/x/y:1",
		Command: []string{"python", "-c", "print('héllo ✓')"}, GPUs: 8, Queue: "h200", DeadlineSeconds: 7200,
		State: api.JobStateSucceeded, Message: "pod succeeded", CreatedBy: "agent:agent-1", CreatedAt: oddTime(),
		StartedAt: &started, FinishedAt: &finished, ExitCode: &exit,
		// Spacing and key order must survive: the result is the Job's bytes.
		Result: json.RawMessage(`{"z": 1, "a": [true, null]}`),
		Error:  &api.JobError{Status: "error", Cluster: "b200", Tier: "bastion", Message: "m"},
		Logs:   "line 1\n\x00bin\xffary\n", Trace: []byte{0, 1, 0xff, 'x'},
	}
}

// testJobs: a Job round-trips with every field; the documented errors.
func testJobs(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")

	j := fullJob(p.ID)
	in := *j
	must(t, s.CreateJob(ctx, j))
	if j.CreatedAt != norm(in.CreatedAt) || j.UpdatedAt != j.CreatedAt || *j.StartedAt != norm(*in.StartedAt) {
		t.Fatalf("CreateJob did not normalise the times: %+v", j)
	}
	if j.LogBytes != len(in.Logs) || j.TraceBytes != len(in.Trace) {
		t.Fatalf("CreateJob sizes %d/%d, want %d/%d", j.LogBytes, j.TraceBytes, len(in.Logs), len(in.Trace))
	}
	got, err := s.GetJob(ctx, j.ID)
	must(t, err)
	equal(t, got, j)

	// A minimal Job: nil command, no times, no exit code, result or error.
	min := &store.Job{ID: dbutil.NewID(), ProjectID: p.ID, State: api.JobStatePending}
	must(t, s.CreateJob(ctx, min))
	if min.CreatedAt.IsZero() || min.UpdatedAt != min.CreatedAt {
		t.Fatalf("zero times not filled in: %+v", min)
	}
	got, err = s.GetJob(ctx, min.ID)
	must(t, err)
	equal(t, got, min)
	if got.Command != nil || got.ExitCode != nil || got.Result != nil || got.Error != nil || got.Trace != nil ||
		got.StartedAt != nil || got.LogBytes != 0 {
		t.Fatalf("minimal job read back with fields set: %+v", got)
	}
	// An empty command is not a nil one.
	empty := &store.Job{ID: dbutil.NewID(), ProjectID: p.ID, State: api.JobStatePending, Command: []string{}}
	must(t, s.CreateJob(ctx, empty))
	got, err = s.GetJob(ctx, empty.ID)
	must(t, err)
	equal(t, got.Command, []string{})

	// A taken ID, a project that does not exist, invalid result JSON.
	dup := fullJob(p.ID)
	dup.ID = j.ID
	wantErr(t, s.CreateJob(ctx, dup), store.ErrAlreadyExists)
	wantErr(t, s.CreateJob(ctx, fullJob("no-such-project")), store.ErrNotFound)
	bad := fullJob(p.ID)
	bad.Result = json.RawMessage(`{"unclosed"`)
	if err := s.CreateJob(ctx, bad); err == nil {
		t.Fatal("CreateJob took a result that is not JSON")
	}
	for _, id := range []string{dup.ID, bad.ID} {
		if id == j.ID {
			continue
		}
		_, err := s.GetJob(ctx, id)
		wantErr(t, err, store.ErrNotFound)
	}
	got, err = s.GetJob(ctx, j.ID)
	must(t, err)
	equal(t, got, j) // the refused duplicate changed nothing

	_, err = s.GetJob(ctx, "no-such-job")
	wantErr(t, err, store.ErrNotFound)

	must(t, s.DeleteJob(ctx, j.ID))
	_, err = s.GetJob(ctx, j.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteJob(ctx, j.ID), store.ErrNotFound)
}

// testListJobs: every filter, alone and together, pages by cursor with a
// true total; lists carry the sizes but not the blobs.
func testListJobs(t *testing.T, s store.Store) {
	ctx := t.Context()
	p1, p2, p3 := newProject(t, s, "p1"), newProject(t, s, "p2"), newProject(t, s, "p3")
	var all []*store.Job
	for i := range 12 {
		pid := []string{p1.ID, p2.ID, p3.ID}[i%3]
		j := fullJob(pid)
		j.AgentID = fmt.Sprintf("agent-%d", i%2)
		j.BrokerID = fmt.Sprintf("broker-%d", i%4)
		j.State = []api.JobState{api.JobStatePending, api.JobStateRunning}[i/6]
		must(t, s.CreateJob(ctx, j))
		all = append(all, j)
	}
	where := func(keep func(*store.Job) bool) []string {
		var out []string
		for _, j := range all {
			if keep(j) {
				out = append(out, j.ID)
			}
		}
		return out
	}
	listIDs := func(f store.JobFilter) func(store.Page) ([]string, string, int, error) {
		return func(p store.Page) ([]string, string, int, error) {
			items, next, total, err := s.ListJobs(ctx, f, p)
			for _, j := range items {
				if j.Logs != "" || j.Trace != nil || j.LogBytes == 0 || j.TraceBytes == 0 {
					t.Fatalf("listed job has logs %q, trace %v, sizes %d/%d: want no blobs, their sizes",
						j.Logs, j.Trace, j.LogBytes, j.TraceBytes)
				}
			}
			return ids(items, func(j *store.Job) string { return j.ID }), next, total, err
		}
	}

	// Everything, 5 a page: 5, 5, 2.
	equal(t, pageThrough(t, 5, 12, []int{5, 5, 2}, listIDs(store.JobFilter{})), where(func(*store.Job) bool { return true }))

	for _, c := range []struct {
		name string
		f    store.JobFilter
		keep func(*store.Job) bool
	}{
		{"project", store.JobFilter{ProjectID: p1.ID}, func(j *store.Job) bool { return j.ProjectID == p1.ID }},
		{"projects", store.JobFilter{ProjectIDs: []string{p1.ID, p3.ID, "no-such"}},
			func(j *store.Job) bool { return j.ProjectID != p2.ID }},
		{"agent", store.JobFilter{AgentID: "agent-1"}, func(j *store.Job) bool { return j.AgentID == "agent-1" }},
		{"broker", store.JobFilter{BrokerID: "broker-2"}, func(j *store.Job) bool { return j.BrokerID == "broker-2" }},
		{"state", store.JobFilter{State: api.JobStateRunning}, func(j *store.Job) bool { return j.State == api.JobStateRunning }},
		{"broker and state", store.JobFilter{BrokerID: "broker-0", State: api.JobStatePending},
			func(j *store.Job) bool { return j.BrokerID == "broker-0" && j.State == api.JobStatePending }},
		{"project within projects", store.JobFilter{ProjectID: p2.ID, ProjectIDs: []string{p1.ID, p2.ID}, AgentID: "agent-0"},
			func(j *store.Job) bool { return j.ProjectID == p2.ID && j.AgentID == "agent-0" }},
		{"project outside projects", store.JobFilter{ProjectID: p2.ID, ProjectIDs: []string{p1.ID}},
			func(*store.Job) bool { return false }},
		{"no projects", store.JobFilter{ProjectIDs: []string{}}, func(*store.Job) bool { return false }},
	} {
		want := where(c.keep)
		// Pages of 2: every page full but maybe the last.
		sizes := []int{}
		for n := len(want); n > 0; n -= 2 {
			sizes = append(sizes, min(n, 2))
		}
		if len(sizes) == 0 {
			sizes = []int{0}
		}
		got := pageThrough(t, 2, len(want), sizes, listIDs(c.f))
		if len(want) == 0 {
			want = nil
		}
		if !slicesEqual(got, want) {
			t.Fatalf("%s: got %v, want %v", c.name, got, want)
		}
	}

	items, _, _, err := s.ListJobs(ctx, store.JobFilter{ProjectIDs: []string{}}, store.Page{})
	must(t, err)
	equal(t, items, []*store.Job{})
	if _, _, _, err := s.ListJobs(ctx, store.JobFilter{}, store.Page{Cursor: "garbage"}); !errors.Is(err, store.ErrBadCursor) {
		t.Fatalf("ListJobs with a bad cursor: %v, want ErrBadCursor", err)
	}
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// testUpdateJobWith: fn's changes are written with UpdatedAt now and the
// sizes of the new blobs; fn's error writes nothing; a gone Job is
// ErrNotFound.
func testUpdateJobWith(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	j := newJob(t, s, p.ID, "a1", "b1")

	time.Sleep(time.Millisecond) // UpdatedAt must move on even on a coarse clock
	started := oddTime()
	exit := 3
	out, err := s.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
		x.ID = "moved" // fn may not move the row
		x.State, x.Message, x.Name, x.StartedAt, x.ExitCode = api.JobStateFailed, "exit 3", "scion-job-1", &started, &exit
		x.Logs, x.Trace, x.Result = "hello\n", []byte("trace"), json.RawMessage(`[1, 2]`)
		x.LogBytes, x.TraceBytes = 999, 999 // the store's, not the caller's
		return nil
	})
	must(t, err)
	if out.ID != j.ID || !out.UpdatedAt.After(j.UpdatedAt) || out.CreatedAt != j.CreatedAt || out.LogBytes != 6 ||
		out.TraceBytes != 5 || *out.StartedAt != norm(started) {
		t.Fatalf("UpdateJobWith returned %+v", out)
	}
	got, err := s.GetJob(ctx, j.ID)
	must(t, err)
	equal(t, got, out)
	_, err = s.GetJob(ctx, "moved")
	wantErr(t, err, store.ErrNotFound)

	// Blobs at the Hub's bounds fit, byte for byte.
	bigLogs := strings.Repeat("log line \x00\xff\n", api.MaxJobLogBytes/12)
	bigTrace := []byte(strings.Repeat("\x00t\xfe", api.MaxJobTraceBytes/3))
	out, err = s.UpdateJobWith(ctx, j.ID, func(x *store.Job) error { x.Logs, x.Trace = bigLogs, bigTrace; return nil })
	must(t, err)
	got, err = s.GetJob(ctx, j.ID)
	must(t, err)
	if got.Logs != bigLogs || string(got.Trace) != string(bigTrace) || got.LogBytes != len(bigLogs) ||
		got.TraceBytes != len(bigTrace) {
		t.Fatalf("big blobs read back as %d/%d bytes (sizes %d/%d), want %d/%d", len(got.Logs), len(got.Trace),
			got.LogBytes, got.TraceBytes, len(bigLogs), len(bigTrace))
	}
	equal(t, got, out)

	// Clearing the blobs clears their sizes.
	out, err = s.UpdateJobWith(ctx, j.ID, func(x *store.Job) error { x.Logs, x.Trace = "", nil; return nil })
	must(t, err)
	if out.LogBytes != 0 || out.TraceBytes != 0 {
		t.Fatalf("cleared blobs, sizes %d/%d", out.LogBytes, out.TraceBytes)
	}
	before, err := s.GetJob(ctx, j.ID)
	must(t, err)

	refuse := errors.New("refused")
	_, err = s.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
		x.State, x.Message, x.Logs = api.JobStateCancelled, "nope", "x"
		return refuse
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("fn's error: got %v", err)
	}
	// A change the store refuses (invalid result JSON) writes nothing either.
	_, err = s.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
		x.Message, x.Result = "bad", json.RawMessage(`{`)
		return nil
	})
	if err == nil {
		t.Fatal("UpdateJobWith took a result that is not JSON")
	}
	got, err = s.GetJob(ctx, j.ID)
	must(t, err)
	equal(t, got, before)

	if _, err := s.UpdateJobWith(ctx, "no-such-job", func(*store.Job) error {
		t.Error("fn called for a job that does not exist")
		return nil
	}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("gone job: got %v, want ErrNotFound", err)
	}
}

// testUpdateJobWithRace: concurrent read-modify-writes of one Job, each
// appending to Message and Logs and counting in GPUs, lose none.
func testUpdateJobWithRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	j := newJob(t, s, p.ID, "a1", "b1")
	const n = 24
	race(t, n, nil, func(i int) error {
		_, err := s.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
			x.Message += "."
			x.Logs += fmt.Sprintf("%d\n", i)
			x.GPUs++
			return nil
		})
		return err
	})
	got, err := s.GetJob(ctx, j.ID)
	must(t, err)
	if got.GPUs != n || len(got.Message) != n || strings.Count(got.Logs, "\n") != n || got.LogBytes != len(got.Logs) {
		t.Fatalf("after %d concurrent updates: gpus %d, message %q, %d log lines (%d bytes, size %d): updates were lost",
			n, got.GPUs, got.Message, strings.Count(got.Logs, "\n"), len(got.Logs), got.LogBytes)
	}
}

// testExpirePendingJobs: only pending rows created before the bound and
// never accepted (no Name) move to error, with an Error naming their
// cluster and tier.
func testExpirePendingJobs(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	bound := time.Now().Add(-time.Minute)
	mk := func(state api.JobState, created time.Time) *store.Job {
		j := &store.Job{ID: dbutil.NewID(), ProjectID: p.ID, Cluster: "b200", Tier: "proxy", State: state,
			Message: "asking", CreatedAt: created}
		must(t, s.CreateJob(ctx, j))
		return j
	}
	old1 := mk(api.JobStatePending, bound.Add(-time.Hour))
	old2 := mk(api.JobStatePending, bound.Add(-time.Microsecond))
	atBound := mk(api.JobStatePending, bound)
	fresh := mk(api.JobStatePending, time.Now())
	running := mk(api.JobStateRunning, bound.Add(-time.Hour))
	done := mk(api.JobStateSucceeded, bound.Add(-time.Hour))
	// Pending but accepted: the broker named its Job on the spoke and
	// follows it (its first report may be slow in coming); it is no
	// lost run.
	accepted := &store.Job{ID: dbutil.NewID(), ProjectID: p.ID, Cluster: "b200", Tier: "proxy", Name: "scion-job-1",
		State: api.JobStatePending, Message: "asking", CreatedAt: bound.Add(-time.Hour)}
	must(t, s.CreateJob(ctx, accepted))

	n, err := s.ExpirePendingJobs(ctx, bound, "hub restarted before the broker answered")
	must(t, err)
	if n != 2 {
		t.Fatalf("expired %d jobs, want 2", n)
	}
	for _, j := range []*store.Job{old1, old2} {
		got, err := s.GetJob(ctx, j.ID)
		must(t, err)
		want := &api.JobError{Status: "error", Cluster: "b200", Tier: "proxy", Message: "hub restarted before the broker answered"}
		if got.State != api.JobStateError || got.Message != want.Message || got.FinishedAt == nil ||
			!got.UpdatedAt.After(j.UpdatedAt) || got.CreatedAt != j.CreatedAt {
			t.Fatalf("expired job read back as %+v", got)
		}
		equal(t, got.Error, want)
	}
	for _, j := range []*store.Job{atBound, fresh, running, done, accepted} {
		got, err := s.GetJob(ctx, j.ID)
		must(t, err)
		equal(t, got, j)
	}
	// Nothing left to expire.
	n, err = s.ExpirePendingJobs(ctx, bound, "again")
	must(t, err)
	if n != 0 {
		t.Fatalf("second expiry touched %d jobs", n)
	}
}

// testDeleteProjectJobs: a project's Jobs go with it; an agent's or a
// broker's deletion keeps theirs (the ledger is history).
func testDeleteProjectJobs(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, other := newProject(t, s, "p"), newProject(t, s, "other")
	b := newBroker(t, s, "b")
	a := newAgent(t, s, p.ID, "a", b.ID)
	kept := newJob(t, s, p.ID, a.ID, b.ID)
	elsewhere := newJob(t, s, other.ID, "x", b.ID)

	must(t, s.DeleteAgent(ctx, a.ID))
	must(t, s.DeleteBroker(ctx, b.ID, true))
	got, err := s.GetJob(ctx, kept.ID)
	must(t, err)
	equal(t, got, kept)

	more := newJob(t, s, p.ID, "a2", "b2")
	must(t, s.DeleteProject(ctx, p.ID))
	for _, id := range []string{kept.ID, more.ID} {
		_, err := s.GetJob(ctx, id)
		wantErr(t, err, store.ErrNotFound)
	}
	items, _, total, err := s.ListJobs(ctx, store.JobFilter{ProjectID: p.ID}, store.Page{})
	must(t, err)
	if len(items) != 0 || total != 0 {
		t.Fatalf("project deleted but %d of its jobs remain", total)
	}
	got, err = s.GetJob(ctx, elsewhere.ID)
	must(t, err)
	equal(t, got, elsewhere)
}

// testCreateJobDeleteProjectRace: a Job created while its project is
// deleted never outlives it.
func testCreateJobDeleteProjectRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	for k := range 5 {
		p := newProject(t, s, fmt.Sprintf("p%d", k))
		race(t, 9, store.ErrNotFound, func(i int) error {
			if i == 0 {
				return s.DeleteProject(ctx, p.ID)
			}
			return s.CreateJob(ctx, &store.Job{ID: dbutil.NewID(), ProjectID: p.ID, State: api.JobStatePending})
		})
		_, total, err := countJobs(s, t, store.JobFilter{ProjectID: p.ID})
		must(t, err)
		if total != 0 {
			t.Fatalf("project deleted but %d of its jobs remain", total)
		}
	}
}

func countJobs(s store.Store, t *testing.T, f store.JobFilter) ([]*store.Job, int, error) {
	items, _, total, err := s.ListJobs(t.Context(), f, store.Page{})
	return items, total, err
}
