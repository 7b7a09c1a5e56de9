package system

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
)

// TestSpokeSweepOnlyOwnJobs: two broker processes (two hosts) share one
// spoke namespace through a cluster with a queue; with no Kueue
// controller (no Admitter) their Jobs stay suspended. Each runs a Job for
// its own agent. kill -9 and restart broker A: its startup sweep deletes
// its own suspended Job and leaves B's, queued beside it; restarting B
// then deletes B's.
func TestSpokeSweepOnlyOwnJobs(t *testing.T) {
	s := requireSpoke(t)
	ns, tok := spokeNamespace(t, s, "sweep")
	hub, token, admin := jobsHub(t)
	fleetFile := `
[clusters.q]
kubeconfig_secret = "SPOKE_KUBECONFIG"
queue = "h200"
connect_timeout = "5s"
`
	secrets := map[string][]byte{"SPOKE_KUBECONFIG": s.KubeconfigBytes(s.URL, tok, ns)}
	a := newJobsBroker(t, hub, token, admin, "bro-a", "fake", fleetFile, secrets)
	b := newJobsBroker(t, hub, token, admin, "bro-b", "fake", fleetFile, secrets)
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"bro-a": api.BrokerOnline, "bro-b": api.BrokerOnline})
	})
	agA := startFakeAgent(t, admin, "bro-a", "agent-a")
	agB := startFakeAgent(t, admin, "bro-b", "agent-b")

	queued := func(ag *jobAgent, brokerID string) string {
		t.Helper()
		r := ag.run(t, cliTimeout, "job", "run", "--cluster", "q", "--image", "busybox", "--detach", "-o", "json", "--", "train.sh")
		if r.code != 0 {
			t.Fatalf("scion job run --detach as %s: %s", ag.name, r)
		}
		name := spokeJobOfCluster(t, s, ns, ag.id, "q", time.Minute)
		j, err := spokeJob(s, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if j.Spec.Suspend == nil || !*j.Spec.Suspend || j.Labels["scion.dev/broker-instance"] != brokerID || j.Labels["kueue.x-k8s.io/queue-name"] != "h200" {
			t.Fatalf("job %s: suspend %v, labels %v; want suspended, of broker %s, in queue h200", name, j.Spec.Suspend, j.Labels, brokerID)
		}
		waitJobState(t, ag, hubJobOf(t, name), api.JobStateQueued)
		return name
	}
	jobA, jobB := queued(agA, a.brokerID), queued(agB, b.brokerID)

	a.proc.Kill9(t)
	// Both Jobs outlive the killed broker: nothing but A's next start may
	// delete A's.
	wait.Consistently(t, 2*time.Second, 100*time.Millisecond, func() error {
		for _, n := range []string{jobA, jobB} {
			if j, err := spokeJob(s, ns, n); err != nil || j.DeletionTimestamp != nil {
				return fmt.Errorf("job %s with broker A dead: err %v, %+v", n, err, j)
			}
		}
		return nil
	})
	a.startJobs(t, "fake")
	gone := waitSpokeJobGone(t, s, ns, jobA)
	t.Logf("MEASURED: broker A's suspended Job deleted by its startup sweep %v after its restart", gone.Round(time.Millisecond))
	waitBrokerLog(t, a.proc, 10*time.Second, "startup sweep: deleted a suspended leftover job", "cluster=q", jobA)
	if j, err := spokeJob(s, ns, jobB); err != nil || j.Spec.Suspend == nil || !*j.Spec.Suspend {
		t.Fatalf("broker B's queued Job %s after broker A's sweep: %v (err %v); want it still there, suspended", jobB, j, err)
	}
	if l := logLine(a.proc, jobB); l != "" {
		t.Errorf("broker A's log names broker B's Job: %s", l)
	}

	b.proc.Kill9(t)
	b.startJobs(t, "fake")
	gone = waitSpokeJobGone(t, s, ns, jobB)
	t.Logf("MEASURED: broker B's suspended Job deleted by its startup sweep %v after its restart", gone.Round(time.Millisecond))
	waitBrokerLog(t, b.proc, 10*time.Second, "startup sweep: deleted a suspended leftover job", "cluster=q", jobB)
}

// waitSpokeJobGone waits until Job name is no longer on the spoke (a
// Job being deleted counts as gone once its deletion has begun).
func waitSpokeJobGone(t *testing.T, sp *kube.Spoke, ns, name string) time.Duration {
	t.Helper()
	return wait.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		j, err := sp.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && j.DeletionTimestamp != nil {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("job %s still on the spoke", name)
	})
}

// waitJobState waits until the agent sees Job id in state.
func waitJobState(t *testing.T, ag *jobAgent, id string, state api.JobState) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if j := ag.jobOf(t, id); j.State != state {
			return fmt.Errorf("job %s: %s (%s), want %s", id, j.State, strings.TrimSpace(j.Message), state)
		}
		return nil
	})
}
