package kube

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Kueue's names the Admitter uses.
const (
	// QueueLabel marks a Job for Kueue (spoke/jobs.LabelQueue).
	QueueLabel = "kueue.x-k8s.io/queue-name"
	// AdmitterClusterQueue is the ClusterQueue the Admitter "admits"
	// into (no such object exists: nothing checks it).
	AdmitterClusterQueue = "scion-fixture"
)

// WorkloadResource is Kueue's Workload at the version its CRDs store
// (v1beta2; v1beta1 is served too, converted without a webhook).
var WorkloadResource = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}

// Admitter does for the Jobs of one namespace what Kueue's controller
// would, so that no Kueue controller needs to run: for each Job with a
// QueueLabel it creates a Workload owned by the Job, and, unless held,
// marks it QuotaReserved and Admitted and sets the Job's spec.suspend to
// false; when the Job finishes it marks the Workload Finished. Jobs
// without the label are not touched (a spoke without Kueue: the runner
// unsuspends those itself).
type Admitter struct {
	s    *Spoke
	ns   string
	hold atomic.Bool
	mu   sync.Mutex
	err  error // the last error of a pass, for Err
}

// StartAdmitter runs an Admitter over namespace until t ends, checking
// every 100 ms.
func (s *Spoke) StartAdmitter(t testing.TB, namespace string) *Admitter {
	a := &Admitter{s: s, ns: namespace}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			err := a.pass(ctx)
			a.mu.Lock()
			a.err = err
			a.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return a
}

// Hold keeps queued Jobs suspended (their Workloads pending, as with
// no quota) while on; Hold(false) lets them be admitted.
func (a *Admitter) Hold(on bool) { a.hold.Store(on) }

// Err is the last pass's error, nil when it went through: for a test
// that waits in vain to say why.
func (a *Admitter) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Workload returns the Workload of Job jobName (nil, nil when there is
// none yet).
func (a *Admitter) Workload(ctx context.Context, jobName string) (*unstructured.Unstructured, error) {
	l, err := a.s.Dynamic.Resource(WorkloadResource).Namespace(a.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range l.Items {
		for _, o := range l.Items[i].GetOwnerReferences() {
			if o.Kind == "Job" && o.Name == jobName {
				return &l.Items[i], nil
			}
		}
	}
	return nil, nil
}

func (a *Admitter) pass(ctx context.Context) error {
	jobs, err := a.s.Client.BatchV1().Jobs(a.ns).List(ctx, metav1.ListOptions{LabelSelector: QueueLabel})
	if err != nil {
		return err
	}
	var first error
	for i := range jobs.Items {
		if err := a.reconcile(ctx, &jobs.Items[i]); err != nil && first == nil {
			first = fmt.Errorf("job %s: %w", jobs.Items[i].Name, err)
		}
	}
	return first
}

func (a *Admitter) reconcile(ctx context.Context, j *batchv1.Job) error {
	if j.DeletionTimestamp != nil {
		return nil
	}
	wl, err := a.Workload(ctx, j.Name)
	if err != nil {
		return err
	}
	if wl == nil {
		if wl, err = a.createWorkload(ctx, j); err != nil {
			return err
		}
	}
	wr := a.s.Dynamic.Resource(WorkloadResource).Namespace(a.ns)
	switch {
	case jobFinished(j):
		if hasCondition(wl, "Finished") {
			return nil
		}
		setCondition(wl, "Finished", "True", "JobFinished", "Job finished")
		_, err = wr.UpdateStatus(ctx, wl, metav1.UpdateOptions{})
		return err
	case a.hold.Load():
		if hasCondition(wl, "QuotaReserved") || conditionStatus(wl, "QuotaReserved") == "False" {
			return nil
		}
		setCondition(wl, "QuotaReserved", "False", "Pending", "held by the test's Admitter")
		_, err = wr.UpdateStatus(ctx, wl, metav1.UpdateOptions{})
		return err
	}
	if !hasCondition(wl, "Admitted") {
		count := int64(1)
		if j.Spec.Parallelism != nil {
			count = int64(*j.Spec.Parallelism)
		}
		setCondition(wl, "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue "+AdmitterClusterQueue)
		setCondition(wl, "Admitted", "True", "Admitted", "The workload is admitted")
		// Set in the same update as QuotaReserved: the CRD's rules
		// refuse a reservation without an admission.
		wl.Object["status"].(map[string]any)["admission"] = map[string]any{
			"clusterQueue": AdmitterClusterQueue,
			"podSetAssignments": []any{map[string]any{
				"name": "main", "count": count,
				"flavors": map[string]any{"cpu": "default"},
			}},
		}
		if _, err := wr.UpdateStatus(ctx, wl, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		_, err := a.s.Client.BatchV1().Jobs(a.ns).Patch(ctx, j.Name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{})
		return err
	}
	return nil
}

// createWorkload is Kueue's Workload for j: one pod set "main" with the
// Job's pod template, owned by the Job (so the garbage collector deletes
// it with the Job).
func (a *Admitter) createWorkload(ctx context.Context, j *batchv1.Job) (*unstructured.Unstructured, error) {
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&j.Spec.Template)
	if err != nil {
		return nil, err
	}
	count := int64(1)
	if j.Spec.Parallelism != nil {
		count = int64(*j.Spec.Parallelism)
	}
	uid := string(j.UID)
	if len(uid) > 5 {
		uid = uid[:5]
	}
	yes := true
	wl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": WorkloadResource.GroupVersion().String(), "kind": "Workload",
		"metadata": map[string]any{
			"name":      "job-" + j.Name + "-" + uid,
			"namespace": j.Namespace,
			"labels":    map[string]any{"kueue.x-k8s.io/job-uid": string(j.UID)},
		},
		"spec": map[string]any{
			"queueName": j.Labels[QueueLabel],
			"podSets":   []any{map[string]any{"name": "main", "count": count, "template": tmpl}},
		},
	}}
	wl.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID,
		Controller: &yes, BlockOwnerDeletion: &yes,
	}})
	out, err := a.s.Dynamic.Resource(WorkloadResource).Namespace(j.Namespace).Create(ctx, wl, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return a.Workload(ctx, j.Name)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// hasCondition reports whether the Workload's condition typ is True.
func hasCondition(wl *unstructured.Unstructured, typ string) bool {
	return conditionStatus(wl, typ) == "True"
}

func conditionStatus(wl *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// setCondition sets (or replaces) a metav1.Condition on the Workload.
func setCondition(wl *unstructured.Unstructured, typ, status, reason, msg string) {
	st, _ := wl.Object["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		wl.Object["status"] = st
	}
	conds, _ := st["conditions"].([]any)
	c := map[string]any{
		"type": typ, "status": status, "reason": reason, "message": msg,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}
	for i, old := range conds {
		if m, ok := old.(map[string]any); ok && m["type"] == typ {
			conds[i] = c
			st["conditions"] = conds
			return
		}
	}
	st["conditions"] = append(conds, c)
}
