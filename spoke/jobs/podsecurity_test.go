package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scion-go/scion/api"
)

// restricted makes o's namespace enforce Pod Security "restricted", as a
// hardened spoke's admin does.
func (o *onSpoke) restricted(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest"}}}`
	if _, err := o.spoke.Client.CoreV1().Namespaces().Patch(ctx, o.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSpokeJobRunsUnderRestricted: in a namespace that enforces Pod
// Security "restricted" (the API server's PodSecurity admission refuses
// the Job controller's pod creates that do not meet it), a Job runs to
// succeeded with its result.
func TestSpokeJobRunsUnderRestricted(t *testing.T) {
	o := newOnSpoke(t)
	o.restricted(t)
	s := o.spec("restricted-ok", nil)
	o.spoke.SetJobLog(t, o.ns, Name(s.JobID), "::scion-result:: {\"restricted\": true}\n")
	final, _ := o.run(t, s, nil)
	if final.State != api.JobStateSucceeded || string(final.Result) != `{"restricted":true}` {
		t.Fatalf("a Job in a restricted namespace: %+v; want succeeded with its result", final)
	}
}

// TestSpokeJobRefusedPodSaysWhy: a cluster block that asks for root
// (run_as_user 0) in a namespace enforcing "restricted": the Job
// controller's pod creates are refused, and the Job's message names the
// FailedCreate and the Pod Security violation within one poll of the
// event, not at its deadline.
func TestSpokeJobRefusedPodSaysWhy(t *testing.T) {
	o := newOnSpoke(t)
	o.restricted(t)
	s := o.spec("restricted-root", nil)
	root := int64(0)
	s.RunAsUser = &root
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Submit(ctx, o.c, s); err != nil {
		t.Fatal(err)
	}
	const poll = 500 * time.Millisecond
	start := time.Now()
	var eventAt time.Time
	final := Follow(ctx, o.c, s, FollowOptions{PollInterval: poll}, func(p Progress) {
		t.Logf("%6.2fs %s %q", time.Since(start).Seconds(), p.State, p.Message)
		if eventAt.IsZero() && strings.Contains(p.Message, "FailedCreate") {
			eventAt = time.Now()
			cancel()
		}
	})
	if eventAt.IsZero() {
		t.Fatalf("the Job's message never named the refused pod create: %+v", final)
	}
	if !strings.Contains(final.Message, "PodSecurity") || final.State != api.JobStateRunning {
		t.Errorf("message %q (%s); want the Pod Security violation", final.Message, final.State)
	}
	// The event's own time against the report's: within one poll (and
	// the event recorder's short delay).
	evs := warningEvents(context.Background(), o.spoke.Client, o.ns, jobUID(t, o, s))
	if len(evs) == 0 {
		t.Fatal("no Warning event on the Job")
	}
	first := eventTime(&evs[0])
	for i := range evs {
		if et := eventTime(&evs[i]); et.Before(first) {
			first = et
		}
	}
	took := eventAt.Sub(first)
	t.Logf("MEASURED: the FailedCreate reached the Job's message %v after the event (poll %v)", took.Round(time.Millisecond), poll)
	if took > poll+2*time.Second { // event timestamps have a second's resolution
		t.Errorf("the FailedCreate reached the message %v after the event; want within one poll", took)
	}
}

func jobUID(t *testing.T, o *onSpoke, s Spec) types.UID {
	t.Helper()
	j, err := o.spoke.Client.BatchV1().Jobs(o.ns).Get(context.Background(), Name(s.JobID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j.UID
}
