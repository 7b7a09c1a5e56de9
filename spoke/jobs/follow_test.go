package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/spoke/fleet"
)

var jobsGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// fakeSpoke is a fake clientset holding one running Job and its pod,
// whose status polls and log reads a test scripts by call number.
type fakeSpoke struct {
	t    *testing.T
	cs   *fake.Clientset
	spec Spec

	mu sync.Mutex
	// getJob is called before each status poll with its number (from 1);
	// a non-nil error fails that poll.
	getJob func(n int) error
	// log answers the n-th log read (from 1): its text or an error.
	log      func(n int, o *corev1.PodLogOptions) (string, error)
	jobGets  int
	logReads int
}

func newFakeSpoke(t *testing.T, s Spec) *fakeSpoke {
	f := &fakeSpoke{t: t, spec: s, cs: fake.NewClientset()}
	j := Manifest(s)
	no := false
	j.Spec.Suspend = &no
	st := metav1.NewTime(time.Now().Add(-time.Minute))
	j.Status.StartTime = &st
	j.Status.Active = 1
	if _, err := f.cs.BatchV1().Jobs(s.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-abcde", Namespace: s.Namespace, UID: "pod-1",
			Labels: map[string]string{LabelPodJobName: j.Name}, CreationTimestamp: metav1.Now()},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	if _, err := f.cs.CoreV1().Pods(s.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cs.PrependReactor("get", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		f.jobGets++
		n, fn := f.jobGets, f.getJob
		f.mu.Unlock()
		if fn != nil {
			if err := fn(n); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	f.cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		f.mu.Lock()
		f.logReads++
		n, fn := f.logReads, f.log
		f.mu.Unlock()
		if fn == nil {
			return true, &runtime.Unknown{Raw: nil}, nil
		}
		o, _ := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
		text, err := fn(n, o)
		if err != nil {
			return true, nil, err
		}
		return true, &runtime.Unknown{Raw: []byte(text)}, nil
	})
	return f
}

// finish marks the Job and its pod finished with exit code code.
func (f *fakeSpoke) finish(code int32) {
	tr := f.cs.Tracker()
	obj, err := tr.Get(jobsGVR, f.spec.Namespace, Name(f.spec.JobID))
	if err != nil {
		f.t.Error(err)
		return
	}
	j := obj.(*batchv1.Job).DeepCopy()
	now := metav1.Now()
	typ, phase := batchv1.JobComplete, corev1.PodSucceeded
	reason := ""
	if code != 0 {
		typ, phase, reason = batchv1.JobFailed, corev1.PodFailed, batchv1.JobReasonBackoffLimitExceeded
	}
	j.Status.Active = 0
	j.Status.Conditions = []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: now}}
	if code == 0 {
		j.Status.CompletionTime = &now
	}
	if err := tr.Update(jobsGVR, j, f.spec.Namespace); err != nil {
		f.t.Error(err)
	}
	pgvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	obj, err = tr.Get(pgvr, f.spec.Namespace, Name(f.spec.JobID)+"-abcde")
	if err != nil {
		f.t.Error(err)
		return
	}
	p := obj.(*corev1.Pod).DeepCopy()
	p.Status.Phase = phase
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	if err := tr.Update(pgvr, p, f.spec.Namespace); err != nil {
		f.t.Error(err)
	}
}

func (f *fakeSpoke) clients() Clients { return Clients{Kube: f.cs} }

func fastOpts() FollowOptions {
	return FollowOptions{PollInterval: 2 * time.Millisecond, RetryFor: time.Minute, Logger: slog.New(slog.DiscardHandler)}
}

func followCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var errDial = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}

func unreachable(s Spec) error {
	return &fleet.UnreachableError{Cluster: s.Cluster, Tier: fleet.Tier(s.Tier), Message: "tunnel reconnecting", Err: errDial}
}

// TestFollowRetriesTransientStatusErrors: three failed status polls in a
// row (an unreachable spoke, a 503, a 429) do not fail the Job: they are
// reported as retrying, and the Job is followed on to its result.
func TestFollowRetriesTransientStatusErrors(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	f.getJob = func(n int) error {
		switch n {
		case 2:
			return unreachable(s)
		case 3:
			return apierrors.NewServiceUnavailable("etcd leader election")
		case 4:
			return apierrors.NewTooManyRequests("slow down", 1)
		case 5:
			f.finish(0)
		}
		return nil
	}
	f.log = func(n int, o *corev1.PodLogOptions) (string, error) {
		return "working\n::scion-result:: {\"loss\": 0.5}\n", nil
	}
	var reports []Progress
	final := Follow(followCtx(t), f.clients(), s, fastOpts(), func(p Progress) { reports = append(reports, p) })
	if final.State != api.JobStateSucceeded || string(final.Result) != `{"loss":0.5}` || final.Error != nil {
		t.Fatalf("final %+v", final)
	}
	if final.ExitCode == nil || *final.ExitCode != 0 {
		t.Errorf("exit code %v", final.ExitCode)
	}
	retrying := 0
	for _, p := range reports {
		if p.State == api.JobStateError {
			t.Errorf("an error was reported: %+v", p)
		}
		if strings.HasPrefix(p.Message, "spoke unreachable (retrying)") {
			retrying++
			if p.State != api.JobStateRunning {
				t.Errorf("while retrying the state is %s, want running", p.State)
			}
		}
	}
	if retrying != 3 {
		t.Errorf("%d retrying reports, want 3: %+v", retrying, reports)
	}
	if last := reports[len(reports)-1]; last.State != api.JobStateSucceeded {
		t.Errorf("the last report is %s", last.State)
	}
}

// TestFollowGivesUpAfterRetryFor: status polls that keep failing past
// RetryFor give the Job up with the typed error naming cluster and tier.
func TestFollowGivesUpAfterRetryFor(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	f.getJob = func(n int) error {
		if n > 1 {
			return unreachable(s)
		}
		return nil
	}
	o := fastOpts()
	o.RetryFor = 100 * time.Millisecond
	start := time.Now()
	var reports []Progress
	final := Follow(followCtx(t), f.clients(), s, o, func(p Progress) { reports = append(reports, p) })
	if time.Since(start) < o.RetryFor {
		t.Errorf("gave up after %v, before RetryFor", time.Since(start))
	}
	if final.State != api.JobStateError || final.Error == nil {
		t.Fatalf("final %+v", final)
	}
	e := final.Error
	if e.Status != "error" || e.Cluster != "b200" || e.Tier != "bastion" || !strings.Contains(e.Message, "unreachable") || !strings.Contains(e.Message, "tunnel reconnecting") {
		t.Errorf("error %+v", e)
	}
	if reports[len(reports)-1].State != api.JobStateError {
		t.Error("the terminal error was not reported")
	}
	for _, p := range reports[:len(reports)-1] {
		if p.State.Terminal() {
			t.Errorf("terminal before the end: %+v", p)
		}
	}
}

// TestFollowGivesUpPastTheJobsDeadline: a Job whose deadline (from its
// start, plus the margin) has passed is given up at the first failed
// poll, not RetryFor later.
func TestFollowGivesUpPastTheJobsDeadline(t *testing.T) {
	s := testSpec()
	s.Deadline = time.Second
	f := newFakeSpoke(t, s) // started a minute ago
	obj, _ := f.cs.Tracker().Get(jobsGVR, s.Namespace, Name(s.JobID))
	j := obj.(*batchv1.Job).DeepCopy()
	// Its deadline (plus the margin) passes 200ms from now.
	st := metav1.NewTime(time.Now().Add(-DeadlineMargin - s.Deadline + 200*time.Millisecond))
	j.Status.StartTime = &st
	if err := f.cs.Tracker().Update(jobsGVR, j, s.Namespace); err != nil {
		t.Fatal(err)
	}
	f.getJob = func(n int) error {
		if n > 1 {
			return unreachable(s)
		}
		return nil
	}
	final := Follow(followCtx(t), f.clients(), s, fastOpts(), nil)
	if final.State != api.JobStateError || final.Error == nil || !strings.Contains(final.Message, "past the Job's deadline") {
		t.Fatalf("final %+v", final)
	}
}

// TestFollowSeenRunningWithoutStartTime: a Job read unsuspended before
// the Job controller set its status.startTime (a cut right after the
// submit) is given up with the time a poll first saw it running, so the
// broker can still bound it by its deadline; StartedAt stays unknown.
func TestFollowSeenRunningWithoutStartTime(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	obj, _ := f.cs.Tracker().Get(jobsGVR, s.Namespace, Name(s.JobID))
	j := obj.(*batchv1.Job).DeepCopy()
	j.Status.StartTime = nil
	if err := f.cs.Tracker().Update(jobsGVR, j, s.Namespace); err != nil {
		t.Fatal(err)
	}
	f.getJob = func(n int) error {
		if n > 2 {
			return unreachable(s)
		}
		return nil
	}
	o := fastOpts()
	o.RetryFor = 50 * time.Millisecond
	before := time.Now()
	final := Follow(followCtx(t), f.clients(), s, o, nil)
	if !final.Unreachable || final.StartedAt != nil {
		t.Fatalf("final %+v; want given up unreachable, no start time read", final)
	}
	if final.SeenRunningAt == nil || final.SeenRunningAt.Before(before) || final.SeenRunningAt.After(time.Now()) {
		t.Fatalf("SeenRunningAt %v; want the first poll's time, after %v", final.SeenRunningAt, before)
	}
}

func TestFollowRefusalAndDeletion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		state api.JobState
		msg   string
	}{
		{"forbidden gives up at once", apierrors.NewForbidden(jobsGVR.GroupResource(), "x", errors.New("no RBAC")), api.JobStateError, "refused"},
		{"unauthorized gives up at once", apierrors.NewUnauthorized("token expired"), api.JobStateError, "refused"},
		{"not found is deleted", apierrors.NewNotFound(jobsGVR.GroupResource(), "x"), api.JobStateCancelled, "gone from the spoke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			f := newFakeSpoke(t, s)
			f.getJob = func(n int) error {
				if n > 1 {
					return tc.err
				}
				return nil
			}
			final := Follow(followCtx(t), f.clients(), s, fastOpts(), nil)
			if final.State != tc.state || !strings.Contains(final.Message, tc.msg) {
				t.Fatalf("final %s %q, want %s %q", final.State, final.Message, tc.state, tc.msg)
			}
			if tc.state == api.JobStateError && (final.Error == nil || final.Error.Cluster != s.Cluster) {
				t.Errorf("error %+v", final.Error)
			}
			if tc.state == api.JobStateCancelled && final.Error != nil {
				t.Errorf("a deleted Job has an error: %+v", final.Error)
			}
			if f.jobGets != 2 {
				t.Errorf("%d polls, want 2", f.jobGets)
			}
		})
	}
}

// TestFollowLogSnapshotsAreMonotonic: a failed log read keeps the last
// snapshot, a shorter whole log of the same pod is ignored, Logs is
// reported only when it changed, and the trace block is stripped from
// the kept snapshot but decoded for the final report.
func TestFollowLogSnapshotsAreMonotonic(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	trace := SentinelTraceBegin + "\n" + b64Lines([]byte("the trace")) + SentinelTraceEnd + "\n"
	logs := []string{
		1: "a\n",
		2: "",    // failed read
		3: "a\n", // unchanged: not reported
		4: "a\nb\n",
		5: "a\n", // shorter whole log: ignored
		6: "a\nb\n" + trace + "::scion-result:: 7\n",
	}
	f.log = func(n int, o *corev1.PodLogOptions) (string, error) {
		if n == 2 {
			return "", apierrors.NewInternalError(errors.New("kubelet unreachable"))
		}
		if n >= 6 {
			if o == nil || o.LimitBytes == nil {
				return "", fmt.Errorf("unbounded log read")
			}
			return logs[6], nil
		}
		if o == nil || o.LimitBytes == nil || *o.LimitBytes != LiveLogBytes || o.TailLines == nil {
			return "", fmt.Errorf("live read with options %+v", o)
		}
		return logs[n], nil
	}
	f.getJob = func(n int) error {
		if n == 6 {
			f.finish(0)
		}
		return nil
	}
	var got []string
	final := Follow(followCtx(t), f.clients(), s, fastOpts(), func(p Progress) {
		if p.Logs != nil {
			got = append(got, *p.Logs)
		}
	})
	want := []string{"a\n", "a\nb\n", "a\nb\n::scion-result:: 7\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("log reports %q, want %q", got, want)
	}
	if final.State != api.JobStateSucceeded || string(final.Result) != "7" || string(final.Trace) != "the trace" {
		t.Errorf("final %+v", final)
	}
}

// TestFollowFinalReadFailsKeepsResultFromSnapshot: when the pod's log
// cannot be read at the end (the pod is gone), the result is parsed from
// the last snapshot read.
func TestFollowFinalReadFailsKeepsResultFromSnapshot(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	f.log = func(n int, o *corev1.PodLogOptions) (string, error) {
		if o.TailLines == nil {
			return "", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "gone")
		}
		return "::scion-result:: {\"ok\":true}\n", nil
	}
	f.getJob = func(n int) error {
		if n == 2 {
			f.finish(4)
		}
		return nil
	}
	final := Follow(followCtx(t), f.clients(), s, fastOpts(), nil)
	if final.State != api.JobStateFailed || final.ExitCode == nil || *final.ExitCode != 4 || string(final.Result) != `{"ok":true}` {
		t.Errorf("final %+v", final)
	}
	if !strings.Contains(final.Message, "exit code 4") {
		t.Errorf("message %q", final.Message)
	}
}

// TestFollowBoundedByItsDeadline: a Job that never finishes is given up
// when the follow's own deadline passes.
func TestFollowBoundedByItsDeadline(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	o := fastOpts()
	o.Deadline = 50 * time.Millisecond
	final := Follow(followCtx(t), f.clients(), s, o, nil)
	if final.State != api.JobStateError || final.Error == nil || !strings.Contains(final.Message, "deadline") {
		t.Errorf("final %+v", final)
	}
}

// TestFollowStopsWithItsContext: ctx ending returns the last state, not a
// terminal one, and reports nothing more.
func TestFollowStopsWithItsContext(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	ctx, cancel := context.WithCancel(followCtx(t))
	n := 0
	final := Follow(ctx, f.clients(), s, fastOpts(), func(p Progress) {
		n++
		cancel()
	})
	if final.State != api.JobStateRunning || n != 1 {
		t.Errorf("final %s after %d reports", final.State, n)
	}
}

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "batch", Resource: "jobs"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"unreachable", unreachable(testSpec()), true},
		{"wrapped unreachable", fmt.Errorf("get: %w", unreachable(testSpec())), true},
		{"dial", errDial, true},
		{"deadline", context.DeadlineExceeded, true},
		{"503", apierrors.NewServiceUnavailable("x"), true},
		{"500", apierrors.NewInternalError(errors.New("x")), true},
		{"429", apierrors.NewTooManyRequests("x", 1), true},
		{"504 server timeout", apierrors.NewServerTimeout(gr, "get", 1), true},
		{"timeout", apierrors.NewTimeoutError("x", 1), true},
		{"403", apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{"401", apierrors.NewUnauthorized("x"), false},
		{"400", apierrors.NewBadRequest("x"), false},
		{"404", apierrors.NewNotFound(gr, "x"), false},
		{"nil", nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// kubeletLog answers a log read as a kubelet does: the last TailLines
// lines, then at most LimitBytes of them from their start.
func kubeletLog(log string, o *corev1.PodLogOptions) string {
	if o != nil && o.TailLines != nil {
		lines := strings.SplitAfter(log, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if n := int(*o.TailLines); n < len(lines) {
			lines = lines[len(lines)-n:]
		}
		log = strings.Join(lines, "")
	}
	if o != nil && o.LimitBytes != nil && int64(len(log)) > *o.LimitBytes {
		log = log[:*o.LimitBytes]
	}
	return log
}

// TestFollowLongLogKeepsItsEnd: a log much longer than the reads'
// bounds still gives the snapshot of its end (the line count is lowered
// until the last lines fit) and the result printed last.
func TestFollowLongLogKeepsItsEnd(t *testing.T) {
	s := testSpec()
	f := newFakeSpoke(t, s)
	var b strings.Builder
	for i := 0; b.Len() < FinalLogBytes+(1<<20); i++ {
		fmt.Fprintf(&b, "line %08d %s\n", i, strings.Repeat("x", 200))
	}
	b.WriteString("::scion-result:: {\"done\":true}\n")
	log := b.String()
	f.log = func(n int, o *corev1.PodLogOptions) (string, error) { return kubeletLog(log, o), nil }
	f.getJob = func(n int) error {
		if n == 3 {
			f.finish(0)
		}
		return nil
	}
	var snaps []string
	final := Follow(followCtx(t), f.clients(), s, fastOpts(), func(p Progress) {
		if p.Logs != nil {
			snaps = append(snaps, *p.Logs)
		}
	})
	if final.State != api.JobStateSucceeded || string(final.Result) != `{"done":true}` {
		t.Fatalf("final %+v", final)
	}
	if len(snaps) == 0 {
		t.Fatal("no log snapshot")
	}
	for i, sn := range snaps {
		if len(sn) > api.MaxJobLogBytes || !strings.HasSuffix(sn, "::scion-result:: {\"done\":true}\n") || !strings.HasPrefix(sn, "line ") {
			t.Errorf("snapshot %d: %d bytes, starts %.20q, ends %q", i, len(sn), sn, sn[max(0, len(sn)-40):])
		}
	}
}
