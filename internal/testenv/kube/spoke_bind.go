package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// kwokLogs is kwok's Logs resource: which file is a pod's log.
var kwokLogs = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

// bind is the fixture's scheduler, run until ctx ends: every new pod
// gets a kwok Logs object naming its log file (LogFile), then is bound to
// FakeNode through the Binding subresource, as kube-scheduler would (a
// scheduler binary would cost another build and a process for one node).
func (s *Spoke) bind(ctx context.Context) {
	f := informers.NewSharedInformerFactoryWithOptions(s.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" }))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](50*time.Millisecond, 2*time.Second))
	pods := f.Core().V1().Pods()
	add := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			q.Add(cache.MetaObjectToName(p))
		}
	}
	pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }})
	f.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	for {
		key, quit := q.Get()
		if quit {
			f.Shutdown()
			return
		}
		p, err := pods.Lister().Pods(key.Namespace).Get(key.Name)
		if err == nil && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			err = s.bindPod(ctx, p)
		} else if apierrors.IsNotFound(err) {
			err = nil
		}
		if err != nil && ctx.Err() == nil {
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

func (s *Spoke) bindPod(ctx context.Context, p *corev1.Pod) error {
	path := s.LogFile(p.Namespace, logName(p))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// An empty log until the test writes one: kwok fails a read of a
	// missing file.
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fh.Close()
	logs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
		"metadata": map[string]any{"name": p.Name, "namespace": p.Namespace},
		"spec":     map[string]any{"logs": []any{map[string]any{"logsFile": path, "follow": true}}},
	}}
	_, err = s.Dynamic.Resource(kwokLogs).Namespace(p.Namespace).Create(ctx, logs, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kwok logs for %s/%s: %w", p.Namespace, p.Name, err)
	}
	err = s.Client.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: FakeNode},
	}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // bound already, or gone
	}
	return err
}

// logName is the name of a pod's log file: its Job's name (the
// job-name label the Job controller sets), else the pod's own name.
func logName(p *corev1.Pod) string {
	if j := p.Labels["batch.kubernetes.io/job-name"]; j != "" {
		return j
	}
	if j := p.Labels["job-name"]; j != "" {
		return j
	}
	return p.Name
}
