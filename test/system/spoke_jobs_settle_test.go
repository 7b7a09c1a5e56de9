package system

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/spoke/jobs"
)

// TestSpokeJobGivenUpIsEndedOnItsSpoke: on the bastion tier with
// status_retry 4s, the bastion is frozen while two Jobs run, long past
// status_retry. Both are given up, yet the ledger does not say ended
// while they may run: they stay running, their message says they were
// given up. The short one finishes on the spoke during the cut; the long
// one still runs. Thawed, the broker deletes the long one from the spoke
// (it ends error with the typed error) and records the short one's real
// outcome (succeeded with its result).
func TestSpokeJobGivenUpIsEndedOnItsSpoke(t *testing.T) {
	t.Parallel()
	s := requireSpoke(t)
	bast := startBastion(t)
	ns, admin := bastionJobsBroker(t, s, bast, "settle", "settler", "2s", "4s")
	agLong := startFakeAgent(t, admin, "settler", "long")
	agShort := startFakeAgent(t, admin, "settler", "short")
	chLong := agLong.startJobRun(t, 3*time.Minute, "--cluster", "bast", "--image", "busybox", "--deadline", "10m",
		"--env", kube.EnvFakeDuration+"=5m", "--", "train.sh", "--long")
	chShort := agShort.startJobRun(t, 3*time.Minute, "--cluster", "bast", "--image", "busybox", "--deadline", "10m",
		"--env", kube.EnvFakeDuration+"=12s", "--", "train.sh", "--short")
	long := spokeJobOfCluster(t, s, ns, agLong.id, "bast", time.Minute)
	short := spokeJobOfCluster(t, s, ns, agShort.id, "bast", time.Minute)
	s.SetJobLog(t, ns, short, "::scion-result:: {\"kept\": true}\n")
	waitPodRunning(t, s, ns, long)
	waitPodRunning(t, s, ns, short)
	idLong, idShort := hubJobOf(t, long), hubJobOf(t, short)
	waitJobMessage(t, agLong, idLong, 30*time.Second, "running")
	waitJobMessage(t, agShort, idShort, 30*time.Second, "running")

	thaw := bast.freeze(t)
	cutAt := time.Now()
	givenUp := wait.Eventually(t, 40*time.Second, 200*time.Millisecond, func() error {
		for _, c := range []struct {
			ag *jobAgent
			id string
		}{{agLong, idLong}, {agShort, idShort}} {
			j := c.ag.jobOf(t, c.id)
			if j.State.Terminal() {
				t.Fatalf("job %s ended %s (%s) while its spoke is unreachable and the Job may run there", c.id, j.State, j.Message)
			}
			if !strings.Contains(j.Message, "given up") {
				return fmt.Errorf("job %s: %s: %s", c.id, j.State, j.Message)
			}
		}
		return nil
	})
	t.Logf("MEASURED: both Jobs said given up %v into the cut (status_retry 4s)", givenUp.Round(time.Millisecond))
	// The short Job ends on the spoke while the broker cannot see it.
	wait.Eventually(t, time.Minute, 200*time.Millisecond, func() error {
		j, err := spokeJob(s, ns, short)
		if err != nil {
			return err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("short job not complete yet")
	})
	for _, c := range []struct {
		ag *jobAgent
		id string
	}{{agLong, idLong}, {agShort, idShort}} {
		if j := c.ag.jobOf(t, c.id); j.State.Terminal() {
			t.Fatalf("job %s ended %s (%s) before its spoke answered", c.id, j.State, j.Message)
		}
	}
	thaw()
	thawedAt := time.Now()
	t.Logf("bastion thawed after a %v cut", thawedAt.Sub(cutAt).Round(time.Millisecond))

	gone := waitSpokeJobGone(t, s, ns, long)
	t.Logf("MEASURED: the given-up running Job was deleted from the spoke %v after it answered again", gone.Round(time.Millisecond))
	r := <-chLong
	if r.code != 1 || !strings.Contains(r.stdout, `"cluster": "bast"`) || !strings.Contains(r.stdout, `"tier": "bastion"`) {
		t.Errorf("scion job run of the given-up long Job: %s; want exit 1 and the typed error", r)
	}
	if j := agLong.jobOf(t, idLong); j.State != api.JobStateError || j.Error == nil || !strings.Contains(j.Message, "deleted from the spoke") {
		t.Errorf("given-up long Job: %+v; want error, the typed error, and that it was deleted from the spoke", j)
	}
	r = <-chShort
	t.Logf("MEASURED: the short Job's real outcome recorded %v after the thaw", time.Since(thawedAt).Round(time.Millisecond))
	if r.code != 0 || compactJSON(r.stdout) != `{"kept":true}` {
		t.Errorf("scion job run of the given-up Job that finished during the cut: %s; want exit 0 and its result", r)
	}
	if j := agShort.jobOf(t, idShort); j.State != api.JobStateSucceeded || j.Error != nil {
		t.Errorf("given-up short Job: %+v; want its real outcome, succeeded", j)
	}
}

// TestSpokeRestartFollowsEachJobUnderItsBlock: two fleet blocks, pub and
// alt (another queue), reach one namespace. A Job runs through pub; the
// namespace also holds a suspended Job of this broker labelled with a
// block it no longer has. After kill -9 and a restart, the broker
// follows pub's Job as pub (its log lines, the ledger), never as alt,
// and leaves the other block's Job alone.
func TestSpokeRestartFollowsEachJobUnderItsBlock(t *testing.T) {
	t.Parallel()
	s := requireSpoke(t)
	ns, tok := spokeNamespace(t, s, "blocks")
	hub, token, admin := jobsHub(t)
	fleetFile := `
[clusters.pub]
kubeconfig_secret = "SPOKE_KUBECONFIG"
connect_timeout = "5s"

[clusters.alt]
kubeconfig_secret = "SPOKE_KUBECONFIG"
queue = "h100"
connect_timeout = "5s"
`
	b := newJobsBroker(t, hub, token, admin, "twoblock", "fake", fleetFile, map[string][]byte{"SPOKE_KUBECONFIG": s.KubeconfigBytes(s.URL, tok, ns)})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"twoblock": api.BrokerOnline})
	})
	// A Job of this broker through a block it no longer has, suspended:
	// a sweep that took it would delete it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	orphan := jobs.Spec{JobID: "orphan-of-gone", AgentID: "someone", BrokerID: b.brokerID, Cluster: "gone", Namespace: ns,
		Queue: "h100", Image: "busybox", Command: []string{"true"}, Deadline: time.Hour}
	if _, err := s.Client.BatchV1().Jobs(ns).Create(ctx, jobs.Manifest(orphan), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ag := startFakeAgent(t, admin, "twoblock", "blocky")
	ch := ag.startJobRun(t, 2*time.Minute, "--cluster", "pub", "--image", "busybox", "--env", kube.EnvFakeDuration+"=15s", "--", "train.sh")
	name := spokeJobOfCluster(t, s, ns, ag.id, "pub", time.Minute)
	s.SetJobLog(t, ns, name, "::scion-result:: {\"block\": \"pub\"}\n")
	waitPodRunning(t, s, ns, name)
	id := hubJobOf(t, name)
	waitJobMessage(t, ag, id, 30*time.Second, "running")

	b.proc.Kill9(t)
	b.startJobs(t, "fake")
	waitBrokerLog(t, b.proc, 30*time.Second, "following a running job again", "cluster=pub", id)
	r := <-ch
	if r.code != 0 || compactJSON(r.stdout) != `{"block":"pub"}` {
		t.Fatalf("scion job run across the restart: %s; want exit 0 and the result", r)
	}
	if l := logLine(b.proc, "cluster=alt", id); l != "" {
		t.Errorf("the restarted broker handled pub's Job as alt: %s", l)
	}
	if cl, _, st := ledgerRow(t, hub, id); cl != "pub" || st != string(api.JobStateSucceeded) {
		t.Errorf("ledger row of pub's Job: cluster %s, state %s; want pub, succeeded", cl, st)
	}
	j, err := spokeJob(s, ns, jobs.Name(orphan.JobID))
	if err != nil || j.DeletionTimestamp != nil || j.Spec.Suspend == nil || !*j.Spec.Suspend {
		t.Errorf("the Job of a block the broker lacks after its restart: %v (err %v); want it untouched, suspended", j, err)
	}
	if l := logLine(b.proc, orphan.JobID); l != "" {
		t.Errorf("the broker's log names the Job of a block it lacks: %s", l)
	}
}
