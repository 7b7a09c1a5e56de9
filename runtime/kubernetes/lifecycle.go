package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/scion-go/scion/runtime"
)

// Start implements runtime.Runtime: it makes the agent's pod from its
// record. A pod that is pending or running is left alone, whoever made it,
// so a retried start never runs an agent twice; a finished pod is removed
// first (its output goes with it) and a new one made.
func (r *Runtime) Start(ctx context.Context, agentID string) (runtime.Status, error) {
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	pod, err := r.currentPod(ctx, t, rec)
	if err != nil {
		return runtime.Status{}, err
	}
	if pod != nil && !terminal(pod) && pod.DeletionTimestamp == nil {
		return statusOf(rec, pod), nil
	}
	if pod != nil {
		// A finished pod, or one being deleted: it must be gone before a
		// new pod can take its name.
		if _, err := r.deletePod(ctx, t, pod, 0); err != nil {
			return runtime.Status{}, err
		}
	}
	want, err := podOf(rec)
	if err != nil {
		return runtime.Status{}, err
	}
	// The record says the agent was started before its pod exists, so
	// that a pod deleted later behind the runtime's back (even while the
	// broker is down) reads exited, not created.
	if rec, err = markStarted(ctx, t, rec, time.Now()); err != nil {
		return runtime.Status{}, err
	}
	pod, err = t.client.CoreV1().Pods(t.key.namespace).Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		// No pod was made: the agent is back to created, not "deleted
		// outside scion". Best effort; the error is Start's answer.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, _ = patchAnnotations(uctx, t, rec, map[string]any{annoStartedAt: nil})
		cancel()
		return runtime.Status{}, fmt.Errorf("kubernetes runtime: start %s: create pod: %w", agentID, err)
	}
	st := statusOf(rec, pod)
	r.emit(st)
	return st, nil
}

// Stop implements runtime.Runtime. A pod cannot be stopped and kept, so
// Stop deletes it with grace as its grace period (the kubelet sends
// SIGTERM, then SIGKILL when it runs out) and waits until it is gone,
// then records how it ended on the agent's record. The agent's output
// goes with the pod. A pod that has finished by itself is kept (with its
// output) and Stop is a no-op.
func (r *Runtime) Stop(ctx context.Context, agentID string, grace time.Duration) (runtime.Status, error) {
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	pod, err := r.currentPod(ctx, t, rec)
	if err != nil || pod == nil || terminal(pod) {
		return statusOf(rec, pod), err
	}
	if grace <= 0 {
		grace = r.opts.StopGrace
	}
	last, err := r.deletePod(ctx, t, pod, grace)
	if err != nil {
		return runtime.Status{}, err
	}
	if rec, err = markFinished(ctx, t, rec, finishedAnnotations(last, time.Now())); err != nil {
		return runtime.Status{}, err
	}
	st := statusOf(rec, nil)
	r.emit(st)
	return st, nil
}

// deletePod deletes pod with grace and waits until the API server no
// longer has it, returning its last state (with the container's exit
// status, when a kubelet reported one). A pod no kubelet runs (not yet
// scheduled) goes at once; a running one when its kubelet has killed it.
func (r *Runtime) deletePod(ctx context.Context, t *target, pod *corev1.Pod, grace time.Duration) (*corev1.Pod, error) {
	pods := t.client.CoreV1().Pods(t.key.namespace)
	w, err := pods.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: watch pod %s: %w", pod.Name, err)
	}
	defer w.Stop()
	secs := int64(math.Ceil(grace.Seconds()))
	uid := pod.UID
	// The caller reports this pod's end itself; the informer's news of
	// it, which may come later, is not an outside deletion.
	r.mu.Lock()
	r.ours[uid] = true
	r.mu.Unlock()
	err = pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &secs, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return pod, nil // gone already, or replaced by a pod not ours to stop
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: delete pod %s: %w", pod.Name, err)
	}
	// The kubelet has the grace period plus its own reaction time; beyond
	// that something is wrong (a node gone), and Stop says so.
	deadline := time.NewTimer(grace + 60*time.Second)
	defer deadline.Stop()
	last := pod
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return r.pollGone(ctx, t, last)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || p.UID != uid {
				continue
			}
			last = p
			if ev.Type == watch.Deleted {
				return last, nil
			}
		case <-deadline.C:
			return nil, fmt.Errorf("kubernetes runtime: pod %s/%s still not gone %v after its deletion", t.key.namespace, pod.Name, grace+60*time.Second)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pollGone waits for a pod to go when its watch ended early.
func (r *Runtime) pollGone(ctx context.Context, t *target, last *corev1.Pod) (*corev1.Pod, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := getPod(ctx, t, last.Name)
		if err != nil {
			return nil, err
		}
		if p == nil || p.UID != last.UID {
			return last, nil
		}
		last = p
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// currentPod is the agent's pod, or nil. A pod of the same name that its
// record does not own (left by an earlier agent of the same ID, deleted
// without grace and still terminating) is not the agent's.
func (r *Runtime) currentPod(ctx context.Context, t *target, rec *corev1.ConfigMap) (*corev1.Pod, error) {
	pod, err := getPod(ctx, t, rec.Name)
	if err != nil || pod == nil {
		return nil, err
	}
	for _, o := range pod.OwnerReferences {
		if o.UID == rec.UID {
			return pod, nil
		}
	}
	if pod.DeletionTimestamp != nil {
		// Not ours, on its way out: Start waits for it.
		return pod, nil
	}
	return nil, fmt.Errorf("kubernetes runtime: pod %s/%s exists but does not belong to agent %s's record", t.key.namespace, pod.Name, rec.Labels["scion.agent_id"])
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, agentID string) (runtime.Status, error) {
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	pod, err := r.currentPod(ctx, t, rec)
	if err != nil {
		return runtime.Status{}, err
	}
	if pod != nil && !ownedBy(pod, rec) {
		pod = nil
	}
	return statusOf(rec, pod), nil
}

func ownedBy(pod *corev1.Pod, rec *corev1.ConfigMap) bool {
	for _, o := range pod.OwnerReferences {
		if o.UID == rec.UID {
			return true
		}
	}
	return false
}

// ErrUnsupported is Suspend's and Resume's error: Kubernetes cannot pause
// a pod's processes.
var ErrUnsupported = fmt.Errorf("kubernetes runtime: suspend and resume are not supported: %w", errors.ErrUnsupported)

// Suspend implements runtime.Runtime; see ErrUnsupported.
func (r *Runtime) Suspend(ctx context.Context, agentID string) (runtime.Status, error) {
	if _, _, err := r.findRecord(ctx, agentID); err != nil {
		return runtime.Status{}, err
	}
	return runtime.Status{}, ErrUnsupported
}

// Resume implements runtime.Runtime; see ErrUnsupported.
func (r *Runtime) Resume(ctx context.Context, agentID string) (runtime.Status, error) {
	if _, _, err := r.findRecord(ctx, agentID); err != nil {
		return runtime.Status{}, err
	}
	return runtime.Status{}, ErrUnsupported
}

// markStarted forgets the last pod's end and records when Start made a
// new pod, in one patch.
func markStarted(ctx context.Context, t *target, rec *corev1.ConfigMap, now time.Time) (*corev1.ConfigMap, error) {
	return patchAnnotations(ctx, t, rec, map[string]any{annoFinishedAt: nil, annoExitCode: nil, annoMessage: nil,
		annoStartedAt: now.UTC().Format(time.RFC3339Nano)})
}

// patchAnnotations merge-patches the record's annotations (a nil value
// removes one).
func patchAnnotations(ctx context.Context, t *target, rec *corev1.ConfigMap, ann map[string]any) (*corev1.ConfigMap, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return nil, err
	}
	out, err := t.client.CoreV1().ConfigMaps(t.key.namespace).Patch(ctx, rec.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: update record %s: %w", rec.Name, err)
	}
	return out, nil
}
