package kubernetes

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// Logs implements runtime.Runtime through the API server's pods/log,
// which the kubelet of the pod's node serves. An agent with no pod (created,
// or stopped: Stop deletes the pod and its output) has no output. Following
// a pod that has not started yet waits until it starts (or goes away, or
// ctx ends).
func (r *Runtime) Logs(ctx context.Context, agentID string, follow bool) (io.ReadCloser, error) {
	return r.LogsTail(ctx, agentID, follow, 0)
}

// LogsTail is Logs starting at the log's last tail lines (0: the whole
// log), cut by the kubelet (PodLogOptions.TailLines), so a followed log
// starts at its tail too instead of being sent whole.
func (r *Runtime) LogsTail(ctx context.Context, agentID string, follow bool, tail int) (io.ReadCloser, error) {
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return nil, err
	}
	pod, err := r.currentPod(ctx, t, rec)
	if err != nil {
		return nil, err
	}
	if pod != nil && !ownedBy(pod, rec) {
		pod = nil
	}
	if pod != nil && !started(pod) && follow {
		if pod, err = r.waitStarted(ctx, t, pod); err != nil {
			return nil, err
		}
	}
	if pod == nil || !started(pod) {
		return io.NopCloser(strings.NewReader("")), nil
	}
	rc, err := t.client.CoreV1().Pods(t.key.namespace).GetLogs(pod.Name, podLogOptions(follow, tail)).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: logs of %s: %w", agentID, err)
	}
	return rc, nil
}

// podLogOptions asks for the agent container's log, from its last tail
// lines when tail > 0.
func podLogOptions(follow bool, tail int) *corev1.PodLogOptions {
	o := &corev1.PodLogOptions{Container: "agent", Follow: follow}
	if tail > 0 {
		n := int64(tail)
		o.TailLines = &n
	}
	return o
}

// waitStarted watches a pending pod until its agent container has started
// (returning the pod) or the pod is gone (returning nil).
func (r *Runtime) waitStarted(ctx context.Context, t *target, pod *corev1.Pod) (*corev1.Pod, error) {
	w, err := t.client.CoreV1().Pods(t.key.namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: watch pod %s: %w", pod.Name, err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The watch timed out: look again, and watch again.
				p, err := getPod(ctx, t, pod.Name)
				if err != nil || p == nil || p.UID != pod.UID || started(p) {
					return p, err
				}
				return r.waitStarted(ctx, t, p)
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.UID != pod.UID {
				continue
			}
			if ev.Type == watch.Deleted {
				return nil, nil
			}
			if started(p) || terminal(p) {
				return p, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
