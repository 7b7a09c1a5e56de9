package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scion-go/scion/api"
)

// TestCancelOwnSparesOthers: a cancel names a Job by its Hub ID, and a
// Job of that name may be another broker's (a Hub that reuses or forges
// an ID, two Hubs on one spoke namespace) or no Job of scion's at all:
// CancelOwn deletes only the broker's own, and a Job already gone is no
// error.
func TestCancelOwnSparesOthers(t *testing.T) {
	ctx := context.Background()
	s := testSpec()
	for _, tc := range []struct {
		name    string
		labels  func(map[string]string)
		deleted bool
	}{
		{"own", func(map[string]string) {}, true},
		{"another broker's", func(l map[string]string) { l[LabelBroker] = "broker-b" }, false},
		{"another run's id", func(l map[string]string) { l[LabelJobID] = "other" }, false},
		{"not scion's", func(l map[string]string) { delete(l, LabelManagedBy) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			j := Manifest(s)
			tc.labels(j.Labels)
			if _, err := cs.BatchV1().Jobs(s.Namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			err := CancelOwn(ctx, Clients{Kube: cs}, s.Namespace, s.JobID, s.BrokerID)
			_, gerr := cs.BatchV1().Jobs(s.Namespace).Get(ctx, Name(s.JobID), metav1.GetOptions{})
			if gone := gerr != nil; gone != tc.deleted {
				t.Fatalf("deleted %v, want %v (cancel: %v)", gone, tc.deleted, err)
			}
			if tc.deleted && err != nil {
				t.Errorf("cancel of its own Job: %v", err)
			}
			if !tc.deleted && err == nil {
				t.Error("a cancel that deleted nothing said nothing")
			}
		})
	}
	if err := CancelOwn(ctx, Clients{Kube: fake.NewClientset()}, s.Namespace, s.JobID, s.BrokerID); err != nil {
		t.Errorf("cancel of a Job already gone: %v", err)
	}
}

// TestOwnedFindsFinished: a Job that ended while its broker was down is
// still the broker's to report (its end never reached the Hub otherwise):
// Owned lists it beside the running ones, not the suspended ones (the
// sweep's) nor one being deleted.
func TestOwnedFindsFinished(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	no := false
	mk := func(id string, edit func(*batchv1.Job)) {
		s := testSpec()
		s.JobID = id
		j := Manifest(s)
		j.Spec.Suspend = &no
		edit(j)
		if _, err := cs.BatchV1().Jobs(s.Namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	now := metav1.NewTime(time.Now())
	mk("running", func(*batchv1.Job) {})
	mk("done", func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	})
	mk("queued", func(j *batchv1.Job) { yes := true; j.Spec.Suspend = &yes })
	got, err := Owned(ctx, Clients{Kube: cs}, testSpec().Namespace, testSpec().BrokerID, testSpec().Cluster)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range got {
		ids[s.JobID] = true
	}
	if !ids["running"] || !ids["done"] || ids["queued"] || len(ids) != 2 {
		t.Errorf("owned %v, want running and done", ids)
	}
}

// TestSubmitRetryLeavesAQueuedJobToKueue: a retried submit (the same Job
// ID and broker) without a queue finds the Job there with Kueue's queue
// label, still waiting for admission: unsuspending it would run it past
// Kueue's quota. Only Kueue admits a queued Job.
func TestSubmitRetryLeavesAQueuedJobToKueue(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	s := testSpec()
	queued := s
	queued.Queue = "h200"
	if _, err := cs.BatchV1().Jobs(s.Namespace).Create(ctx, Manifest(queued), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Submit(ctx, Clients{Kube: cs}, s); err != nil {
		t.Fatal(err)
	}
	j, err := cs.BatchV1().Jobs(s.Namespace).Get(ctx, Name(s.JobID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Spec.Suspend == nil || !*j.Spec.Suspend {
		t.Error("a queued Job was unsuspended by a retried submit without its queue")
	}
}

// TestSweepAfterAStatusWrite: the Job controller writes a suspended Job's
// status soon after the create; when that lands between the sweep's list
// and its delete, the delete's precondition fails, and the sweep reads the
// Job again: still suspended, it is reaped (a loaded CI run saw it left);
// admitted in between, it is not.
func TestSweepAfterAStatusWrite(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		admitted bool
	}{{"status written", false}, {"admitted", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			s.Queue = "h200"
			cs := fake.NewClientset()
			if _, err := cs.BatchV1().Jobs(s.Namespace).Create(ctx, Manifest(s), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			conflicts := 0
			cs.PrependReactor("delete", "jobs", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
				if conflicts > 0 {
					return false, nil, nil // the tracker deletes
				}
				conflicts++
				// What happened between the list and the delete.
				j, _ := cs.Tracker().Get(batchv1.SchemeGroupVersion.WithResource("jobs"), s.Namespace, Name(s.JobID))
				job := j.(*batchv1.Job).DeepCopy()
				job.ResourceVersion = "2"
				if tc.admitted {
					job.Spec.Suspend = ptrTo(false)
				} else {
					job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue})
				}
				if err := cs.Tracker().Update(batchv1.SchemeGroupVersion.WithResource("jobs"), job, s.Namespace); err != nil {
					t.Fatal(err)
				}
				return true, nil, apierrors.NewConflict(batchv1.Resource("jobs"), Name(s.JobID), errors.New("the object has been modified"))
			})
			swept, err := Sweep(ctx, Clients{Kube: cs}, s.Namespace, s.BrokerID, s.Cluster)
			if err != nil {
				t.Fatal(err)
			}
			if want := !tc.admitted; (len(swept) == 1) != want || conflicts != 1 {
				t.Fatalf("swept %v after %d conflict(s); want it reaped: %v", swept, conflicts, want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestSubmitOfAJobDeletedBeforeItsStart: a Job deleted between the create
// and the patch that starts it (a cancel, someone on the spoke) is
// submitted, and its follow reports it cancelled. Submit failed with the
// patch's 404, and the runner reported an error for a cancelled Job (a
// loaded CI run of broker's TestJobRunnerLogsThroughTheBrokersLogger).
func TestSubmitOfAJobDeletedBeforeItsStart(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	s := testSpec()
	cs.PrependReactor("patch", "jobs", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if err := cs.Tracker().Delete(a.GetResource(), a.GetNamespace(), Name(s.JobID)); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), Name(s.JobID))
	})
	if err := Submit(ctx, Clients{Kube: cs}, s); err != nil {
		t.Fatalf("submit of a Job deleted before its start: %v", err)
	}
	p := Follow(ctx, Clients{Kube: cs}, s, FollowOptions{PollInterval: time.Millisecond}, nil)
	if p.State != api.JobStateCancelled {
		t.Fatalf("followed to %q (%s), want cancelled", p.State, p.Message)
	}
}
