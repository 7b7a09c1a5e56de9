package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/scion-go/scion/runtime"
)

// watch feeds Events from the pods of this broker in t's namespace until
// ctx ends. It is an informer (list, then watch, re-listing whenever the
// watch breaks or its resource version expires), so that a dropped
// connection to the API server loses no exit: the re-list brings every pod
// up to date and the per-agent dedup in emit drops what was already said.
func (r *Runtime) watch(ctx context.Context, t *target) {
	sel := r.selector("", "")
	pods := t.client.CoreV1().Pods(t.key.namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
			o.LabelSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { r.podChanged(obj) },
			UpdateFunc: func(_, obj any) { r.podChanged(obj) },
			DeleteFunc: r.podDeleted,
		},
	})
	ctrl.RunWithContext(ctx)
}

// podChanged reports the state a pod now shows.
func (r *Runtime) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	st := statusOf(nil, pod)
	if st.AgentID == "" || r.ignored(pod, st.AgentID, false) {
		return
	}
	r.emit(st)
}

// podDeleted reports a pod deleted by someone else (a person, an
// eviction, a node drain) as the agent's exit: its record stays, so the
// agent can be started again. Deletions by Stop, Start and Delete are
// reported by those calls themselves.
func (r *Runtime) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	st := statusOf(nil, pod)
	if st.AgentID == "" || r.ignored(pod, st.AgentID, true) {
		return
	}
	if st.State != runtime.StateExited {
		st.State = runtime.StateExited
		st.Message = "pod " + pod.Name + " was deleted outside scion"
	}
	r.emit(st)
}

// ignored reports whether news of pod is not to be reported: it is a pod
// the runtime deleted itself (forgotten once its deletion is seen), or of
// an agent Delete removed.
func (r *Runtime) ignored(pod *corev1.Pod, agentID string, deleted bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ours := r.ours[pod.UID]
	if deleted {
		delete(r.ours, pod.UID)
	}
	return ours || r.gone[agentID]
}
