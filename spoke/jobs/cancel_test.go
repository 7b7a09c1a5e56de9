package jobs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tests' cancel: CancelOwn without the ownership check, for Jobs a
// test made itself. The broker only ever cancels with CancelOwn.

// Cancel deletes the Job and its pods (background propagation: the
// garbage collector deletes the pods); a Job already gone is not an
// error.
func Cancel(ctx context.Context, c Clients, namespace, jobID string) error {
	bg := metav1.DeletePropagationBackground
	err := c.Kube.BatchV1().Jobs(namespace).Delete(ctx, Name(jobID), metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete job %s/%s: %w", namespace, Name(jobID), err)
	}
	return nil
}
