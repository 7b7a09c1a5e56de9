package jobs

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// workloadVersions are the Kueue API versions tried, newest first: a
// spoke runs whichever Kueue its admin installed.
var workloadVersions = []string{"v1beta2", "v1beta1"}

// LabelWorkloadJobUID is the label Kueue puts on a Job's Workload.
const LabelWorkloadJobUID = "kueue.x-k8s.io/job-uid"

// workloadMessage is Kueue's word on a queued Job: why its Workload is
// pending, or that it was admitted. Any failure to read it is "": the
// Workload only makes the queued message better, it decides nothing.
func workloadMessage(ctx context.Context, dc dynamic.Interface, namespace string, jobUID types.UID) string {
	if dc == nil || jobUID == "" {
		return ""
	}
	for _, v := range workloadVersions {
		gvr := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: v, Resource: "workloads"}
		ri := dc.Resource(gvr).Namespace(namespace)
		l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: LabelWorkloadJobUID + "=" + string(jobUID)})
		if err != nil {
			continue // that version is not served (or not readable): try the next
		}
		if len(l.Items) == 0 {
			// Older Kueue labels nothing: find it by its owner.
			if l, err = ri.List(ctx, metav1.ListOptions{}); err != nil {
				return ""
			}
			var owned []unstructured.Unstructured
			for _, w := range l.Items {
				for _, o := range w.GetOwnerReferences() {
					if o.UID == jobUID {
						owned = append(owned, w)
					}
				}
			}
			l.Items = owned
		}
		if len(l.Items) == 0 {
			return "no Kueue workload yet"
		}
		return WorkloadMessage(&l.Items[0])
	}
	return ""
}

// WorkloadMessage reads a Kueue Workload's conditions: admitted (by which
// cluster queue), or why it is pending.
func WorkloadMessage(w *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	get := func(typ string) (status, reason, message string, ok bool) {
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m == nil || m["type"] != typ {
				continue
			}
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
			return status, reason, message, true
		}
		return "", "", "", false
	}
	if st, _, msg, ok := get("Admitted"); ok && st == "True" {
		cq, _, _ := unstructured.NestedString(w.Object, "status", "admission", "clusterQueue")
		if cq != "" {
			return "admitted by cluster queue " + clip(cq, 63)
		}
		if msg != "" {
			return "admitted: " + clip(msg, 200)
		}
		return "admitted"
	}
	if st, _, msg, ok := get("Evicted"); ok && st == "True" {
		return "evicted: " + clip(msg, 200)
	}
	if st, reason, msg, ok := get("QuotaReserved"); ok {
		switch {
		case st == "True":
			return "quota reserved, waiting for admission checks"
		case msg != "":
			return "pending: " + clip(msg, 300)
		case reason != "":
			return "pending: " + clip(reason, 63)
		}
	}
	return "pending"
}
