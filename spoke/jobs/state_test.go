package jobs

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scion-go/scion/api"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func jobWith(suspend bool, conds ...batchv1.JobCondition) *batchv1.Job {
	j := Manifest(testSpec())
	j.Spec.Suspend = &suspend
	if !suspend {
		st := metav1.NewTime(t0)
		j.Status.StartTime = &st
	}
	j.Status.Conditions = conds
	return j
}

func cond(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))}
}

func pod(name string, created time.Time, phase corev1.PodPhase, state corev1.ContainerState) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: state}}},
	}
}

func terminated(code int32, reason string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
}

func TestObserve(t *testing.T) {
	queued := testSpec()
	queued.Queue = "h200"
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, tc := range []struct {
		name     string
		spec     Spec
		job      *batchv1.Job
		pods     []corev1.Pod
		pending  string
		state    api.JobState
		msg      string // in the message
		exit     int    // -1: none
		started  bool
		finished bool
	}{
		{"suspended, no queue", testSpec(), jobWith(true), nil, "", api.JobStateQueued, "waiting to be started", -1, false, false},
		{"suspended in a queue", queued, jobWith(true), nil, "", api.JobStateQueued, "waiting for admission in queue h200", -1, false, false},
		{"suspended with Kueue's word", queued, jobWith(true), nil, "pending: insufficient quota", api.JobStateQueued, "queue h200: pending: insufficient quota", -1, false, false},
		{"preempted: suspended again", queued, jobWith(true), []corev1.Pod{pod("p", t0, corev1.PodFailed, terminated(137, "Error"))}, "", api.JobStateQueued, "queue h200", -1, false, false},
		{"admitted, no pod", testSpec(), jobWith(false), nil, "", api.JobStateRunning, "waiting for its pod", -1, true, false},
		{"pod pulling", testSpec(), jobWith(false), []corev1.Pod{pod("p", t0, corev1.PodPending, waiting)}, "", api.JobStateRunning, "pending: ImagePullBackOff: no such image", -1, true, false},
		{"pod running", testSpec(), jobWith(false), []corev1.Pod{pod("p", t0, corev1.PodRunning, running)}, "", api.JobStateRunning, "pod p running", -1, true, false},
		{"newest pod wins", testSpec(), jobWith(false), []corev1.Pod{pod("old", t0, corev1.PodFailed, terminated(1, "Error")), pod("new", t0.Add(time.Second), corev1.PodRunning, running)}, "", api.JobStateRunning, "pod new running", -1, true, false},
		{"complete", testSpec(), jobWith(false, cond(batchv1.JobComplete, "")), []corev1.Pod{pod("p", t0, corev1.PodSucceeded, terminated(0, "Completed"))}, "", api.JobStateSucceeded, "succeeded", 0, true, true},
		{"failed with an exit code", testSpec(), jobWith(false, cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)), []corev1.Pod{pod("p", t0, corev1.PodFailed, terminated(3, "Error"))}, "", api.JobStateFailed, "exit code 3", 3, true, true},
		{"failed OOM", testSpec(), jobWith(false, cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)), []corev1.Pod{pod("p", t0, corev1.PodFailed, terminated(137, "OOMKilled"))}, "", api.JobStateFailed, "exit code 137 (OOMKilled)", 137, true, true},
		{"deadline exceeded", testSpec(), jobWith(false, cond(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded)), nil, "", api.JobStateFailed, "deadline of 1h30m0s passed", -1, true, true},
		{"failed for another reason", testSpec(), jobWith(false, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy", Message: "rule 0"}), nil, "", api.JobStateFailed, "PodFailurePolicy: rule 0", -1, true, false},
		{"a false Complete condition is not complete", testSpec(), jobWith(false, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionFalse}), nil, "", api.JobStateRunning, "waiting for its pod", -1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Observe(tc.spec, tc.job, tc.pods, tc.pending)
			if p.State != tc.state || !strings.Contains(p.Message, tc.msg) {
				t.Errorf("got %s %q, want %s %q", p.State, p.Message, tc.state, tc.msg)
			}
			if (tc.exit < 0) != (p.ExitCode == nil) || (p.ExitCode != nil && *p.ExitCode != tc.exit) {
				t.Errorf("exit code %v, want %d", p.ExitCode, tc.exit)
			}
			if (p.StartedAt != nil) != tc.started || (p.StartedAt != nil && !p.StartedAt.Equal(t0)) {
				t.Errorf("startedAt %v", p.StartedAt)
			}
			if (p.FinishedAt != nil) != tc.finished && tc.finished {
				t.Errorf("finishedAt %v", p.FinishedAt)
			}
			if p.Error != nil || p.Logs != nil || p.Result != nil {
				t.Errorf("Observe set more than state: %+v", p)
			}
		})
	}
}

func TestWorkloadMessage(t *testing.T) {
	wl := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": status}}
	}
	c := func(typ, status, reason, msg string) any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
	}
	for _, tc := range []struct {
		name string
		w    *unstructured.Unstructured
		want string
	}{
		{"no status", wl(nil), "pending"},
		{"pending with a reason", wl(map[string]any{"conditions": []any{c("QuotaReserved", "False", "Pending", "couldn't assign flavors: insufficient nvidia.com/gpu")}}), "pending: couldn't assign flavors: insufficient nvidia.com/gpu"},
		{"quota reserved", wl(map[string]any{"conditions": []any{c("QuotaReserved", "True", "QuotaReserved", "")}}), "quota reserved, waiting for admission checks"},
		{"admitted", wl(map[string]any{"conditions": []any{c("QuotaReserved", "True", "", ""), c("Admitted", "True", "Admitted", "")}, "admission": map[string]any{"clusterQueue": "gpu"}}), "admitted by cluster queue gpu"},
		{"evicted", wl(map[string]any{"conditions": []any{c("Evicted", "True", "Preempted", "preempted by a higher priority")}}), "evicted: preempted by a higher priority"},
		{"a hostile message is clipped", wl(map[string]any{"conditions": []any{c("QuotaReserved", "False", "", strings.Repeat("x", 5000))}}), "pending: " + strings.Repeat("x", 300) + "..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorkloadMessage(tc.w); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
