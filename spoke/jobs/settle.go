package jobs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Settled is what Settle found of a Job given up while its spoke was
// unreachable.
type Settled string

const (
	// SettledFinished: the Job ended on the spoke meanwhile; its real
	// outcome is to be read (Follow) and recorded.
	SettledFinished Settled = "finished"
	// SettledDeleted: it was still there, not finished, and was deleted.
	SettledDeleted Settled = "deleted"
	// SettledGone: it is no longer on the spoke.
	SettledGone Settled = "gone"
)

// Settle ends, on the spoke, a Job that was given up while its spoke did
// not answer: a Job that finished meanwhile is left for its outcome to
// be read; one that still runs or waits is deleted (only if it is
// brokerID's: CancelOwn), so that a Job nobody follows any more spends no
// GPU time and never ends unseen. An error means the spoke did not say
// (still unreachable, or refused): the caller tries again later.
func Settle(ctx context.Context, c Clients, namespace, jobID, brokerID string) (Settled, error) {
	j, err := c.Kube.BatchV1().Jobs(namespace).Get(ctx, Name(jobID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return SettledGone, nil
	}
	if err != nil {
		return "", fmt.Errorf("read job %s/%s: %w", namespace, Name(jobID), err)
	}
	if finished(j) {
		return SettledFinished, nil
	}
	if err := CancelOwn(ctx, c, namespace, jobID, brokerID); err != nil {
		return "", err
	}
	return SettledDeleted, nil
}
