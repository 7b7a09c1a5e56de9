package kubernetes

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/scion-go/scion/runtime"
)

// Annotations on an agent's record that remember how its last pod ended,
// since Stop deletes that pod (a pod cannot be stopped and started again).
const (
	annoFinishedAt = "scion.dev/finished-at"
	annoExitCode   = "scion.dev/exit-code"
	annoMessage    = "scion.dev/message"
	// annoStartedAt is when Start last made a pod: with no pod and no
	// finished-at, the pod went without Stop (deleted outside scion, or
	// evicted while the broker was away), and the agent has exited, not
	// "created" as if it had never run.
	annoStartedAt = "scion.dev/started-at"
)

// goneMessage is the status message of an agent whose pod was removed
// behind the runtime's back.
const goneMessage = "its pod was deleted outside scion"

// statusOf is the agent's status from its record and its current pod (nil
// when it has none). It is pure. The mapping:
//
//   - no pod, never started: created (Create makes the record, Start the pod)
//   - no pod after a Stop: exited, with the exit code the pod ended with
//   - no pod after a Start with no Stop: exited, with goneMessage (the pod
//     was deleted by someone else, perhaps while the broker was down)
//   - Pending: pending, with why in Message (see podReason): the scheduler's
//     reason when no node will take it, the kubelet's when its image does
//     not pull or its container cannot be made. Start has done its part,
//     but nothing runs yet, and an agent reported running here would look
//     healthy on a cluster that can never run it
//   - Running: running only while the agent container is; its container
//     waiting (restarting, its image gone) is pending with the reason, its
//     container terminated is exited with its code
//   - Succeeded / Failed: exited, with the agent container's exit code
//   - a pod being deleted keeps its phase's state until it is gone
func statusOf(rec *corev1.ConfigMap, pod *corev1.Pod) runtime.Status {
	var st runtime.Status
	var meta map[string]string
	if rec != nil {
		meta = rec.Annotations
		st.Labels = decodeLabels(rec.Annotations, rec.Labels)
	}
	if pod == nil {
		st.State = runtime.StateCreated
		if t, err := time.Parse(time.RFC3339Nano, meta[annoFinishedAt]); err == nil {
			st.State = runtime.StateExited
			st.FinishedAt = t
			if c, err := strconv.Atoi(meta[annoExitCode]); err == nil {
				st.ExitCode = &c
			}
			st.Message = meta[annoMessage]
		} else if t, err := time.Parse(time.RFC3339Nano, meta[annoStartedAt]); err == nil {
			st.State = runtime.StateExited
			st.StartedAt = t
			st.Message = goneMessage
		}
		st.AgentID, st.RunID = st.Labels[runtime.LabelAgentID], st.Labels[runtime.LabelRunID]
		return st
	}
	if st.Labels == nil {
		st.Labels = decodeLabels(pod.Annotations, pod.Labels)
	}
	st.AgentID, st.RunID = st.Labels[runtime.LabelAgentID], st.Labels[runtime.LabelRunID]
	// StartedAt is when Start made the pod: stable from the first look
	// on, so that a repeated Start reports the same launch.
	st.StartedAt = pod.CreationTimestamp.Time
	cs := agentContainer(pod)
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		st.State = runtime.StateExited
		if cs != nil && cs.State.Terminated != nil {
			exited(&st, cs.State.Terminated)
		} else {
			st.Message = strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)
		}
	case corev1.PodRunning:
		switch {
		case cs != nil && cs.State.Running != nil:
			st.State = runtime.StateRunning
		case cs != nil && cs.State.Terminated != nil:
			// The pod's phase follows its only container's end.
			st.State = runtime.StateExited
			exited(&st, cs.State.Terminated)
		default:
			st.State = runtime.StatePending
			st.Message = podReason(pod, cs)
		}
	default: // Pending, Unknown, or no phase yet
		st.State = runtime.StatePending
		st.Message = podReason(pod, cs)
	}
	if pod.DeletionTimestamp != nil && (st.State == runtime.StateRunning || st.State == runtime.StatePending) {
		st.Message = strings.TrimSpace("stopping " + st.Message)
	}
	return st
}

// exited fills in how the agent container ended.
func exited(st *runtime.Status, t *corev1.ContainerStateTerminated) {
	code := int(t.ExitCode)
	st.ExitCode = &code
	st.FinishedAt = t.FinishedAt.Time
	st.Message = strings.TrimSpace(t.Reason + " " + t.Message)
}

// maxReason bounds a pod's reason in a status message: the scheduler's
// account of a large cluster, or a kubelet's of a registry, can be long.
const maxReason = 512

// podReason says why a pod that is not running is not, most specific
// first: a container the kubelet cannot start (its image does not pull,
// its Secret is missing) with the kubelet's reason and message, the
// scheduler's reason and message when no node takes the pod, else what
// the pod waits for.
func podReason(pod *corev1.Pod, cs *corev1.ContainerStatus) string {
	// An init container (the scion binary's copy) that cannot start
	// holds the agent back as surely as its own image.
	for _, ic := range pod.Status.InitContainerStatuses {
		if w := ic.State.Waiting; w != nil && failingReason(w.Reason) {
			return bounded("pending: init container " + ic.Name + ": " + joinReason(w.Reason, w.Message))
		}
	}
	if cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
		w := cs.State.Waiting
		if failingReason(w.Reason) {
			return bounded("pending: " + joinReason(w.Reason, w.Message))
		}
		return "pending: " + w.Reason // ContainerCreating, PodInitializing
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Reason != "" {
			return bounded("pending: " + joinReason(c.Reason, c.Message))
		}
	}
	if pod.Spec.NodeName == "" {
		return "pending: not scheduled"
	}
	return "pending"
}

// failingReason reports whether a waiting container's reason is a
// failure the kubelet retries (and that a person must usually fix)
// rather than a step on the way.
func failingReason(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable",
		"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff", "PreCreateHookError", "PostStartHookError":
		return true
	}
	return false
}

func joinReason(reason, message string) string {
	if message = strings.TrimSpace(message); message != "" {
		return reason + ": " + message
	}
	return reason
}

func bounded(s string) string {
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// agentContainer is the status of the pod's agent container, if reported.
func agentContainer(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == "agent" {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// started reports whether the agent container has run (or is running),
// i.e. whether it can have output.
func started(pod *corev1.Pod) bool {
	cs := agentContainer(pod)
	return cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil)
}

// decodeLabels returns the spec's labels from the annotation that keeps
// them whole, falling back to the object's labels.
func decodeLabels(annotations, labels map[string]string) map[string]string {
	out := map[string]string{}
	if err := json.Unmarshal([]byte(annotations[annoLabels]), &out); err != nil || len(out) == 0 {
		out = map[string]string{}
		for k, v := range labels {
			out[k] = v
		}
	}
	delete(out, labelKind)
	delete(out, labelClaimScope)
	return out
}

// finishedAnnotations records how a pod ended on its agent's record.
func finishedAnnotations(pod *corev1.Pod, now time.Time) map[string]string {
	st := statusOf(nil, pod)
	m := map[string]string{annoFinishedAt: now.UTC().Format(time.RFC3339Nano), annoExitCode: "", annoMessage: "stopped"}
	if !st.FinishedAt.IsZero() {
		m[annoFinishedAt] = st.FinishedAt.UTC().Format(time.RFC3339Nano)
	}
	if st.ExitCode != nil {
		m[annoExitCode] = strconv.Itoa(*st.ExitCode)
		m[annoMessage] = fmt.Sprintf("stopped (exit code %d)", *st.ExitCode)
	} else if cs := agentContainer(pod); cs != nil && cs.LastTerminationState.Terminated != nil {
		m[annoExitCode] = strconv.Itoa(int(cs.LastTerminationState.Terminated.ExitCode))
	}
	return m
}
