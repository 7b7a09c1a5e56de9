package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/scion-go/scion/runtime"
)

// An agent's record is a ConfigMap named like its pod. It exists from
// Create to Delete and holds the pod to make at each Start (a pod cannot
// be stopped and started again, so Start makes a new one from it) and how
// the last pod ended. It carries the identity labels, so that a restarted
// broker finds its agents by label, created, running or stopped alike. It
// holds no secret: the pod it holds takes the agent's secrets from the
// agent's Secret (secret.go).

const (
	kindRecord = "agent-record"
	recordPod  = "pod.json"
)

func (r *Runtime) selector(agentID string, kind string) string {
	set := labels.Set{runtime.LabelBrokerID: r.opts.BrokerID}
	if agentID != "" {
		set[runtime.LabelAgentID] = agentID
	}
	if kind != "" {
		set[labelKind] = kind
	}
	sel := labels.SelectorFromSet(set).String()
	if agentID == "" {
		sel += "," + runtime.LabelAgentID
	}
	return sel
}

// newRecord makes the record of an agent whose pod is pod.
func newRecord(pod *corev1.Pod) (*corev1.ConfigMap, error) {
	b, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	lbl := map[string]string{labelKind: kindRecord}
	for k, v := range pod.Labels {
		lbl[k] = v
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Labels: lbl,
			Annotations: map[string]string{annoLabels: pod.Annotations[annoLabels]}},
		Data: map[string]string{recordPod: string(b)},
	}, nil
}

// podOf returns the pod the record says to make.
func podOf(rec *corev1.ConfigMap) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(rec.Data[recordPod]), &pod); err != nil {
		return nil, fmt.Errorf("kubernetes runtime: record %s: %w", rec.Name, err)
	}
	pod.Namespace = rec.Namespace
	pod.ResourceVersion = ""
	// The record owns the pod: on a cluster with a garbage collector a
	// record deleted by hand takes its pod along.
	t := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: rec.Name, UID: rec.UID, Controller: &t}}
	return &pod, nil
}

// findRecord looks the agent's record up in its cached target, else in
// every target.
func (r *Runtime) findRecord(ctx context.Context, agentID string) (*target, *corev1.ConfigMap, error) {
	if err := r.checkOpen(); err != nil {
		return nil, nil, err
	}
	if !validID(agentID) {
		return nil, nil, notFound(agentID)
	}
	r.mu.Lock()
	cached := r.where[agentID]
	r.mu.Unlock()
	targets := r.allTargets()
	if cached != nil {
		targets = append([]*target{cached}, targets...)
	}
	seen := map[*target]bool{}
	for _, t := range targets {
		if seen[t] {
			continue
		}
		seen[t] = true
		list, err := t.client.CoreV1().ConfigMaps(t.key.namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector(agentID, kindRecord)})
		if err != nil {
			return nil, nil, fmt.Errorf("kubernetes runtime: list records in %s: %w", t.key.namespace, err)
		}
		if len(list.Items) > 0 {
			r.mu.Lock()
			r.where[agentID] = t
			r.mu.Unlock()
			return t, &list.Items[0], nil
		}
	}
	r.mu.Lock()
	if r.where[agentID] == cached {
		delete(r.where, agentID)
	}
	r.mu.Unlock()
	return nil, nil, notFound(agentID)
}

// getPod returns the agent's current pod, or nil when it has none.
func getPod(ctx context.Context, t *target, name string) (*corev1.Pod, error) {
	pod, err := t.client.CoreV1().Pods(t.key.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: get pod %s/%s: %w", t.key.namespace, name, err)
	}
	return pod, nil
}

// markFinished records how the agent's last pod ended (or, with a nil
// pod, that it was stopped before it ran).
func markFinished(ctx context.Context, t *target, rec *corev1.ConfigMap, ann map[string]string) (*corev1.ConfigMap, error) {
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
