package jobs

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Submit creates the Job suspended and, with no queue, admits it (the
// runner is its own admission there; with a queue Kueue admits). It is
// idempotent: a Job of that name already there with the same job-id and
// broker labels (a retried run) is taken as submitted, and admitted if
// it still waits with no queue; a Job of that name that is not this
// run's is an error, and is left alone.
func Submit(ctx context.Context, c Clients, s Spec) error {
	if err := Validate(s); err != nil {
		return err
	}
	jobs := c.Kube.BatchV1().Jobs(s.Namespace)
	j, err := jobs.Create(ctx, Manifest(s), metav1.CreateOptions{FieldManager: ManagedBy})
	if apierrors.IsAlreadyExists(err) {
		j, err = jobs.Get(ctx, Name(s.JobID), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("cluster %s: job %s/%s exists but cannot be read: %w", s.Cluster, s.Namespace, Name(s.JobID), err)
		}
		if j.Labels[LabelJobID] != s.JobID || j.Labels[LabelBroker] != s.BrokerID || j.Labels[LabelManagedBy] != ManagedBy {
			return fmt.Errorf("cluster %s: a job %s/%s that is not this run's is there (job-id %q, broker %q): not touched",
				s.Cluster, s.Namespace, j.Name, j.Labels[LabelJobID], j.Labels[LabelBroker])
		}
	} else if err != nil {
		return fmt.Errorf("cluster %s: create job %s/%s: %w", s.Cluster, s.Namespace, Name(s.JobID), err)
	}
	// A Job that carries a queue label is Kueue's to admit, whatever this
	// (retried) Spec says: unsuspending it would pass Kueue's quota by.
	if s.Queue != "" || j.Labels[LabelQueue] != "" || !suspended(j) || finished(j) {
		return nil
	}
	return resume(ctx, c, j)
}

// resume unsuspends j, if it is the one we read: a precondition on its
// UID keeps a Job deleted and made again meanwhile from being resumed.
func resume(ctx context.Context, c Clients, j *batchv1.Job) error {
	patch := fmt.Sprintf(`{"metadata":{"uid":%q},"spec":{"suspend":false}}`, j.UID)
	if j.UID == "" {
		patch = `{"spec":{"suspend":false}}`
	}
	_, err := c.Kube.BatchV1().Jobs(j.Namespace).Patch(ctx, j.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: ManagedBy})
	if apierrors.IsNotFound(err) {
		// Deleted between the create and this patch (a cancel, or someone
		// on the spoke): it was submitted, and the follow's first poll
		// reports it cancelled, as for a Job deleted a moment later. A
		// failed submit here would report an error for a cancelled Job.
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster %s: start job %s/%s: %w", j.Labels[LabelCluster], j.Namespace, j.Name, err)
	}
	return nil
}

func suspended(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }

func finished(j *batchv1.Job) bool {
	return condition(j, batchv1.JobComplete) != nil || condition(j, batchv1.JobFailed) != nil
}

// CancelOwn deletes the Job and its pods (background propagation: the
// garbage collector deletes the pods) for the broker brokerID, only if
// it is that broker's Job of that ID (its job-id, broker and managed-by
// labels), preconditioned on the UID it read, so that a cancel never
// deletes another broker's Job of the same name (a Hub that reuses or
// forges an ID, two Hubs on one namespace) nor one made again meanwhile.
// A Job already gone is not an error; one that is not ours is, and is
// left alone.
func CancelOwn(ctx context.Context, c Clients, namespace, jobID, brokerID string) error {
	jobs := c.Kube.BatchV1().Jobs(namespace)
	j, err := jobs.Get(ctx, Name(jobID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read job %s/%s before deleting it: %w", namespace, Name(jobID), err)
	}
	if brokerID == "" || j.Labels[LabelJobID] != jobID || j.Labels[LabelBroker] != brokerID || j.Labels[LabelManagedBy] != ManagedBy {
		return fmt.Errorf("job %s/%s is not this broker's (job-id %q, broker %q): not deleted",
			namespace, j.Name, j.Labels[LabelJobID], j.Labels[LabelBroker])
	}
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	if j.UID != "" {
		uid := j.UID
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err = jobs.Delete(ctx, j.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete job %s/%s: %w", namespace, j.Name, err)
	}
	return nil
}

// Selector selects the Jobs brokerID submitted through its cluster block
// named cluster. Two blocks may reach one namespace (a profile's block on
// a file cluster's spoke with another queue): each block's sweep and
// follow take only the Jobs labelled with its own name, so that a Job is
// followed with the credentials, tier and name it was submitted with, and
// a Job of a block this broker no longer has is left alone.
func Selector(brokerID, cluster string) string {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy, LabelBroker: brokerID, LabelCluster: cluster}).String()
}

func listOwn(ctx context.Context, c Clients, namespace, brokerID, cluster string) ([]batchv1.Job, error) {
	if brokerID == "" {
		return nil, fmt.Errorf("no broker ID: every broker's Jobs would match")
	}
	if cluster == "" {
		return nil, fmt.Errorf("no cluster name: every block's Jobs would match")
	}
	var out []batchv1.Job
	opts := metav1.ListOptions{LabelSelector: Selector(brokerID, cluster), Limit: 500}
	for {
		l, err := c.Kube.BatchV1().Jobs(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list jobs in %s: %w", namespace, err)
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// Sweep deletes this broker's Jobs of cluster that are still suspended in
// namespace (leftovers of a broker that died before admission) and
// returns their names. Jobs of other brokers or other cluster blocks, and
// admitted Jobs, are never touched: the selector has the broker's ID and
// the cluster's name, and each delete is preconditioned on the
// resource version listed, so a Job admitted since the list (Kueue
// unsuspended it) is not deleted (it is skipped; Owned finds it).
func Sweep(ctx context.Context, c Clients, namespace, brokerID, cluster string) ([]string, error) {
	js, err := listOwn(ctx, c, namespace, brokerID, cluster)
	if err != nil {
		return nil, err
	}
	var swept []string
	for i := range js {
		gone, err := sweepOne(ctx, c, namespace, &js[i])
		if err != nil {
			return swept, err
		}
		if gone {
			swept = append(swept, js[i].Name)
		}
	}
	return swept, nil
}

// sweepAttempts bounds sweepOne's reads again after a conflict.
const sweepAttempts = 5

// sweepOne deletes j if it is still suspended, unfinished and not being
// deleted, at the version it was read: a Job admitted in between is not
// the sweep's. A conflict is not always an admission: the Job controller
// writes a suspended Job's status (its Suspended condition) soon after
// the create, which a loaded CI run saw land between the list and the
// delete, and the sweep then left a Job it had to reap. So a conflict
// reads the Job again and judges it anew.
func sweepOne(ctx context.Context, c Clients, namespace string, j *batchv1.Job) (bool, error) {
	bg := metav1.DeletePropagationBackground
	for range sweepAttempts {
		if !suspended(j) || finished(j) || j.DeletionTimestamp != nil {
			return false, nil
		}
		uid, rv := j.UID, j.ResourceVersion
		pre := &metav1.Preconditions{}
		if uid != "" {
			pre.UID = &uid
		}
		if rv != "" {
			pre.ResourceVersion = &rv
		}
		err := c.Kube.BatchV1().Jobs(namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: pre})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil // gone
		case !apierrors.IsConflict(err):
			return false, fmt.Errorf("sweep: delete job %s/%s: %w", namespace, j.Name, err)
		}
		again, err := c.Kube.BatchV1().Jobs(namespace).Get(ctx, j.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("sweep: read job %s/%s again: %w", namespace, j.Name, err)
		case uid != "" && again.UID != uid:
			return false, nil // another Job of that name since: not the one listed
		}
		j = again
	}
	return false, nil // it keeps changing: the next sweep judges it
}

// Owned lists this broker's Jobs of cluster in namespace that were admitted, running
// or finished (a restarted broker follows them again: a Job that ended
// while the broker was down is followed to its end at once, so that its
// end reaches the Hub), as Specs rebuilt from their labels and spec.
// Suspended Jobs are the sweep's; a Job whose labels do not rebuild a
// Spec (edited by hand) is skipped.
func Owned(ctx context.Context, c Clients, namespace, brokerID, cluster string) ([]Spec, error) {
	js, err := listOwn(ctx, c, namespace, brokerID, cluster)
	if err != nil {
		return nil, err
	}
	var out []Spec
	for i := range js {
		j := &js[i]
		if (suspended(j) && !finished(j)) || j.DeletionTimestamp != nil {
			continue
		}
		if s, err := specOf(j); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}
