package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/scion-go/scion/internal/testenv/kube"
)

// kubeSpec is a Spec in a fresh namespace of the fixture.
func kubeSpec(t *testing.T, c *kube.Cluster, jobID, broker string) Spec {
	s := testSpec()
	s.JobID, s.BrokerID = jobID, broker
	s.Namespace = c.Namespace(t)
	return s
}

func kubeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestSubmitOnAPIServer: a Job submitted with no queue is created
// suspended with the labels and started (unsuspended) at once; with a
// queue it stays suspended for Kueue; a second Submit is a no-op, and a
// Job of that name that is another run's is refused and left alone.
func TestSubmitOnAPIServer(t *testing.T) {
	c := kube.Need(t)
	ctx := kubeCtx(t)
	cl := Clients{Kube: c.Client}

	s := kubeSpec(t, c, "job-1", "broker-a")
	// Watch from a list's version: the watch cache of a fresh API
	// server may not have caught up with a version of its own choosing.
	l0, err := c.Client.BatchV1().Jobs(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Client.BatchV1().Jobs(s.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: l0.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := Submit(ctx, cl, s); err != nil {
		t.Fatal(err)
	}
	j, err := c.Client.BatchV1().Jobs(s.Namespace).Get(ctx, Name(s.JobID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Spec.Suspend == nil || *j.Spec.Suspend {
		t.Errorf("a Job with no queue is still suspended")
	}
	for k, v := range Labels(s) {
		if j.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, j.Labels[k], v)
		}
	}
	// The API server kept what makes the Job bounded and harmless.
	if *j.Spec.ActiveDeadlineSeconds != int64(s.Deadline/time.Second) || *j.Spec.BackoffLimit != 0 ||
		*j.Spec.TTLSecondsAfterFinished != int32(DefaultTTL/time.Second) || *j.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Errorf("job spec %+v", j.Spec)
	}
	// It was created suspended: the watch's first event is the create.
	ev := <-w.ResultChan()
	if jc, ok := ev.Object.(*batchv1.Job); !ok || ev.Type != watch.Added || jc.Spec.Suspend == nil || !*jc.Spec.Suspend {
		t.Errorf("first event %s %+v: not a suspended create", ev.Type, ev.Object)
	}
	w.Stop()

	if err := Submit(ctx, cl, s); err != nil {
		t.Errorf("a second submit: %v", err)
	}

	q := kubeSpec(t, c, "job-2", "broker-a")
	q.Queue = "h200"
	if err := Submit(ctx, cl, q); err != nil {
		t.Fatal(err)
	}
	jq, err := c.Client.BatchV1().Jobs(q.Namespace).Get(ctx, Name(q.JobID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !*jq.Spec.Suspend || jq.Labels[LabelQueue] != "h200" {
		t.Errorf("a queued Job: suspend %v, labels %v", *jq.Spec.Suspend, jq.Labels)
	}

	other := q
	other.BrokerID = "broker-b"
	err = Submit(ctx, cl, other)
	if err == nil || !strings.Contains(err.Error(), "not this run's") {
		t.Errorf("submit over another broker's Job: %v", err)
	}
	jq2, _ := c.Client.BatchV1().Jobs(q.Namespace).Get(ctx, Name(q.JobID), metav1.GetOptions{})
	if jq2.Labels[LabelBroker] != "broker-a" || !*jq2.Spec.Suspend {
		t.Errorf("the other run's Job was touched: %v", jq2.Labels)
	}
}

// TestSweepOwnedCancelOnAPIServer: among two brokers' Jobs, and the Jobs
// of two of one broker's cluster blocks that reach one namespace, Sweep
// deletes only its own block's suspended ones; Owned lists its own
// block's admitted, unfinished ones as Specs; Cancel deletes one, and
// again is no error.
func TestSweepOwnedCancelOnAPIServer(t *testing.T) {
	c := kube.Need(t)
	ctx := kubeCtx(t)
	cl := Clients{Kube: c.Client}
	ns := c.Namespace(t)
	submitTo := func(jobID, broker, cluster, queue string) Spec {
		s := testSpec()
		s.JobID, s.BrokerID, s.Namespace, s.Queue, s.Cluster = jobID, broker, ns, queue, cluster
		if err := Submit(ctx, cl, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	submit := func(jobID, broker, queue string) Spec { return submitTo(jobID, broker, testSpec().Cluster, queue) }
	aQueued := submit("a-queued", "broker-a", "h200")
	aRunning := submit("a-running", "broker-a", "")
	submit("b-queued", "broker-b", "h200")
	bRunning := submit("b-running", "broker-b", "")
	// Broker A's Jobs through another block on the same namespace.
	submitTo("a-pub-queued", "broker-a", "pub", "h100")
	submitTo("a-pub-running", "broker-a", "pub", "")
	block := testSpec().Cluster

	swept, err := Sweep(ctx, cl, ns, "broker-a", block)
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 1 || swept[0] != Name(aQueued.JobID) {
		t.Errorf("swept %v, want only %s", swept, Name(aQueued.JobID))
	}
	// No garbage collector here: a deleted Job with background
	// propagation is gone at once (no finalizer holds it).
	l, err := c.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, j := range l.Items {
		left = append(left, j.Name)
	}
	slices.Sort(left)
	want := []string{Name("a-pub-queued"), Name("a-pub-running"), Name("a-running"), Name("b-queued"), Name("b-running")}
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if _, err := Sweep(ctx, cl, ns, "", block); err == nil {
		t.Error("a sweep with no broker ID was not refused")
	}
	if _, err := Sweep(ctx, cl, ns, "broker-a", ""); err == nil {
		t.Error("a sweep with no cluster name was not refused")
	}

	owned, err := Owned(ctx, cl, ns, "broker-a", block)
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) != 1 || owned[0].JobID != aRunning.JobID || owned[0].Image != aRunning.Image ||
		owned[0].Tier != aRunning.Tier || owned[0].Deadline != aRunning.Deadline || owned[0].Env["A"] != "1" {
		t.Errorf("owned %+v", owned)
	}

	if err := Cancel(ctx, cl, ns, bRunning.JobID); err != nil {
		t.Fatal(err)
	}
	if err := Cancel(ctx, cl, ns, bRunning.JobID); err != nil {
		t.Errorf("a second cancel: %v", err)
	}
	if _, err := c.Client.BatchV1().Jobs(ns).Get(ctx, Name(bRunning.JobID), metav1.GetOptions{}); err == nil {
		t.Error("the cancelled Job is still there")
	}
}
