package jobs

import (
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/scion-go/scion/api"
)

// Observe maps a Job and its pods to the state the Hub is told: suspended
// is queued (admission is Kueue's or, with no queue, the runner's own);
// a Complete condition is succeeded, a Failed one failed (a passed
// activeDeadlineSeconds says so); anything else is running, with what its
// pod is doing as the message. pending is a Kueue Workload's word on a
// queued Job ("" when there is none). Logs, results and errors are not
// here: Follow adds them.
func Observe(s Spec, j *batchv1.Job, pods []corev1.Pod, pending string) Progress {
	var p Progress
	if t := j.Status.StartTime; t != nil {
		st := t.Time.UTC()
		p.StartedAt = &st
	}
	pod := newestPod(pods)
	p.ExitCode = exitCode(pod)
	if c := condition(j, batchv1.JobComplete); c != nil {
		p.State, p.Message = api.JobStateSucceeded, "succeeded"
		p.FinishedAt = finishedAt(j, c)
		return p
	}
	if c := condition(j, batchv1.JobFailed); c != nil {
		p.State = api.JobStateFailed
		p.FinishedAt = finishedAt(j, c)
		switch c.Reason {
		case batchv1.JobReasonDeadlineExceeded:
			d := s.deadline()
			if ad := j.Spec.ActiveDeadlineSeconds; ad != nil {
				d = time.Duration(*ad) * time.Second
			}
			p.Message = fmt.Sprintf("failed: its deadline of %v passed (activeDeadlineSeconds) and it was stopped", d)
		case batchv1.JobReasonBackoffLimitExceeded, "":
			p.Message = "failed"
			if p.ExitCode != nil {
				p.Message = fmt.Sprintf("failed: exit code %d", *p.ExitCode)
			}
			if r := terminatedReason(pod); r != "" && r != "Error" && r != "Completed" {
				p.Message += " (" + r + ")"
			}
		default:
			p.Message = "failed: " + c.Reason
			if c.Message != "" {
				p.Message += ": " + c.Message
			}
		}
		return p
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		p.State = api.JobStateQueued
		switch {
		case s.Queue != "":
			p.Message = "waiting for admission in queue " + s.Queue
		default:
			p.Message = "submitted, waiting to be started"
		}
		if pending != "" {
			p.Message += ": " + pending
		}
		// A Job that ran and was suspended again (preempted) is queued,
		// not running: its pod is gone.
		p.ExitCode = nil
		return p
	}
	p.State = api.JobStateRunning
	p.Message = podMessage(pod)
	return p
}

func condition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func finishedAt(j *batchv1.Job, c *batchv1.JobCondition) *time.Time {
	t := c.LastTransitionTime.Time
	if j.Status.CompletionTime != nil {
		t = j.Status.CompletionTime.Time
	}
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// newestPod is the Job's latest pod (with backoffLimit 0 there is one,
// but a replaced pod may linger while it terminates).
func newestPod(pods []corev1.Pod) *corev1.Pod {
	if len(pods) == 0 {
		return nil
	}
	ps := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ps[i] = &pods[i]
	}
	sort.SliceStable(ps, func(a, b int) bool {
		ta, tb := ps[a].CreationTimestamp.Time, ps[b].CreationTimestamp.Time
		if !ta.Equal(tb) {
			return ta.After(tb)
		}
		return ps[a].Name > ps[b].Name
	})
	return ps[0]
}

func containerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.ContainerStatuses {
		if cs := &pod.Status.ContainerStatuses[i]; cs.Name == ContainerName {
			return cs
		}
	}
	if len(pod.Status.ContainerStatuses) == 1 {
		return &pod.Status.ContainerStatuses[0]
	}
	return nil
}

func exitCode(pod *corev1.Pod) *int {
	cs := containerStatus(pod)
	if cs == nil || cs.State.Terminated == nil {
		return nil
	}
	c := int(cs.State.Terminated.ExitCode)
	return &c
}

func terminatedReason(pod *corev1.Pod) string {
	if cs := containerStatus(pod); cs != nil && cs.State.Terminated != nil {
		return cs.State.Terminated.Reason
	}
	return ""
}

// podMessage is what a running Job's pod is doing.
func podMessage(pod *corev1.Pod) string {
	if pod == nil {
		return "admitted, waiting for its pod"
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		return "pod " + pod.Name + " running"
	case corev1.PodSucceeded, corev1.PodFailed:
		return "pod " + pod.Name + " finished, waiting for the Job's status"
	}
	msg := "pod " + pod.Name + " pending"
	if cs := containerStatus(pod); cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
		msg += ": " + cs.State.Waiting.Reason
		if m := cs.State.Waiting.Message; m != "" {
			msg += ": " + clip(m, 200)
		}
		return msg
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			msg += ": " + c.Reason
			if c.Message != "" {
				msg += ": " + clip(c.Message, 200)
			}
		}
	}
	return msg
}

// clip cuts a spoke's message to n bytes (at a rune boundary): what a
// spoke says is not bounded by us.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
