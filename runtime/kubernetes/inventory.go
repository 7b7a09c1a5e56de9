package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/runtime"
)

// Inventory implements runtime.Runtime: every agent record of this broker
// in every namespace its profiles (and the agents created since it
// started) name, with its pod's state. Two lists per namespace, whatever
// the number of agents.
func (r *Runtime) Inventory(ctx context.Context) ([]runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	var out []runtime.Status
	for _, t := range r.allTargets() {
		recs, err := t.client.CoreV1().ConfigMaps(t.key.namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector("", kindRecord)})
		if err != nil {
			return nil, fmt.Errorf("kubernetes runtime: list records in %s: %w", t.key.namespace, err)
		}
		if len(recs.Items) == 0 {
			continue
		}
		pods, err := t.client.CoreV1().Pods(t.key.namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector("", "")})
		if err != nil {
			return nil, fmt.Errorf("kubernetes runtime: list pods in %s: %w", t.key.namespace, err)
		}
		byName := make(map[string]*corev1.Pod, len(pods.Items))
		for i := range pods.Items {
			byName[pods.Items[i].Name] = &pods.Items[i]
		}
		for i := range recs.Items {
			rec := &recs.Items[i]
			pod := byName[rec.Name]
			if pod != nil && !ownedBy(pod, rec) {
				pod = nil
			}
			st := statusOf(rec, pod)
			out = append(out, st)
			r.mu.Lock()
			r.where[st.AgentID] = t
			r.mu.Unlock()
		}
	}
	return out, nil
}
