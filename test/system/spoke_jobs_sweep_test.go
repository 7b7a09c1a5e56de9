package system

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
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
	t.Parallel() // before the fixture (see requireKube)
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
		if j := ag.jobOf(t, hubJobOf(t, name)); !strings.Contains(j.Message, "queue h200") {
			t.Errorf("queued job %s: message %q; want it to name its queue", name, j.Message)
		} else {
			t.Logf("queued job's message: %s", j.Message)
		}
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
	// The Job the sweep deleted is over for its agent too: a `scion job
	// run` waiting on it must not wait for ever.
	wait.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if j := agA.jobOf(t, hubJobOf(t, jobA)); !j.State.Terminal() {
			return fmt.Errorf("broker A's swept Job %s is %s in the Hub (%s); want it ended", jobA, j.State, j.Message)
		}
		return nil
	})
	if j := agB.jobOf(t, hubJobOf(t, jobB)); j.State != api.JobStateQueued {
		t.Errorf("broker B's Job after A's sweep: %s (%s); want still queued", j.State, j.Message)
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

// TestSpokeJobFollowedAcrossBrokerRestart: a broker killed with SIGKILL
// while its Job runs leaves the Job to its spoke; restarted, it follows
// the Job again (its labels rebuild the run), and the `scion job run`
// still waiting gets the Job's end and result. Then `scion job cancel`
// of a running Job deletes it on the spoke and ends it cancelled.
func TestSpokeJobFollowedAcrossBrokerRestart(t *testing.T) {
	t.Parallel() // before the fixture (see requireKube)
	s := requireSpoke(t)
	ns, tok := spokeNamespace(t, s, "resume")
	hub, token, admin := jobsHub(t)
	fleetFile := `
[clusters.pub]
kubeconfig_secret = "SPOKE_KUBECONFIG"
connect_timeout = "5s"
`
	b := newJobsBroker(t, hub, token, admin, "phoenix", "fake", fleetFile, map[string][]byte{"SPOKE_KUBECONFIG": s.KubeconfigBytes(s.URL, tok, ns)})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"phoenix": api.BrokerOnline})
	})
	ag := startFakeAgent(t, admin, "phoenix", "survivor")
	ch := ag.startJobRun(t, 2*time.Minute, "--cluster", "pub", "--image", "busybox", "--env", kube.EnvFakeDuration+"=12s", "--", "train.sh")
	name := spokeJobOfCluster(t, s, ns, ag.id, "pub", time.Minute)
	s.SetJobLog(t, ns, name, "epoch 1\n::scion-result:: {\"resumed\": true}\n")
	waitPodRunning(t, s, ns, name)
	id := hubJobOf(t, name)
	waitJobMessage(t, ag, id, 30*time.Second, "running")

	b.proc.Kill9(t)
	killedAt := time.Now()
	b.startJobs(t, "fake")
	waitBrokerLog(t, b.proc, 30*time.Second, "following a running job again", "cluster=pub", id)
	r := <-ch
	t.Logf("MEASURED: the Job followed again after the broker's kill -9 ended %v after the kill (scion job run took %v)", time.Since(killedAt).Round(time.Millisecond), r.took.Round(time.Millisecond))
	if r.code != 0 || compactJSON(r.stdout) != `{"resumed":true}` {
		t.Fatalf("scion job run across the broker's restart: %s; want exit 0 and the result", r)
	}
	if j := ag.jobOf(t, id); j.State != api.JobStateSucceeded || j.Cluster != "pub" || j.Tier != "public" {
		t.Errorf("job %s after the broker's restart: %+v; want succeeded on pub (public)", id, j)
	}

	// Cancel of a running Job, for an agent of the restarted broker (the
	// fake runtime's agents die with their broker).
	ag = startFakeAgent(t, admin, "phoenix", "canceller")
	ch = ag.startJobRun(t, 2*time.Minute, "--cluster", "pub", "--image", "busybox", "--env", kube.EnvFakeDuration+"=90s", "--", "train.sh", "--long")
	var long string
	wait.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := s.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "scion.dev/agent=" + ag.id})
		if err != nil {
			return err
		}
		for _, j := range l.Items {
			long = j.Name
			return nil
		}
		return fmt.Errorf("no second Job yet")
	})
	waitPodRunning(t, s, ns, long)
	c := ag.run(t, cliTimeout, "job", "cancel", hubJobOf(t, long), "-o", "json")
	if c.code != 0 {
		t.Fatalf("scion job cancel: %s", c)
	}
	gone := waitSpokeJobGone(t, s, ns, long)
	r = <-ch
	t.Logf("MEASURED: cancel: the Job left the spoke %v after scion job cancel answered; scion job run ended with %s", gone.Round(time.Millisecond), r)
	if r.code != 1 || !strings.Contains(r.stderr, ": cancelled") {
		t.Errorf("scion job run of a cancelled Job: %s; want exit 1 and the cancelled state", r)
	}
	if j := ag.jobOf(t, hubJobOf(t, long)); j.State != api.JobStateCancelled {
		t.Errorf("cancelled job: %+v", j)
	}

	// A Job whose program fails (exit code 3) after printing a result and
	// a trace: failed with its exit code, the result and the trace kept,
	// the trace block not in the log.
	trace := []byte("profile bytes \x00\x01\x02 of the failed run")
	ch = ag.startJobRun(t, 2*time.Minute, "--cluster", "pub", "--image", "busybox",
		"--env", kube.EnvFakeExit+"=3", "--env", kube.EnvFakeDuration+"=2s", "--", "train.sh", "--fail")
	var failing string
	wait.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := s.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "scion.dev/agent=" + ag.id})
		if err != nil {
			return err
		}
		for _, j := range l.Items {
			if j.Name != long {
				failing = j.Name
				return nil
			}
		}
		return fmt.Errorf("no third Job yet")
	})
	s.SetJobLog(t, ns, failing, "epoch 1\n::scion-result:: {\"loss\": 9}\n::scion-trace-begin::\n"+
		base64.StdEncoding.EncodeToString(trace)+"\n::scion-trace-end::\nTraceback: boom\n")
	r = <-ch
	if r.code != 1 || compactJSON(r.stdout) != `{"loss":9}` || !strings.Contains(r.stderr, "failed with exit code 3") {
		t.Errorf("scion job run of a failing Job: %s; want exit 1, its result, and its exit code named", r)
	}
	fid := hubJobOf(t, failing)
	if j := ag.jobOf(t, fid); j.State != api.JobStateFailed || j.ExitCode == nil || *j.ExitCode != 3 || j.TraceBytes != len(trace) {
		t.Errorf("failed job: %+v; want failed, exit code 3, a trace of %d bytes", j, len(trace))
	}
	tf := filepath.Join(t.TempDir(), "trace.bin")
	lr := ag.run(t, cliTimeout, "job", "logs", fid, "--trace", tf)
	got, err := os.ReadFile(tf)
	if lr.code != 0 || err != nil || !bytes.Equal(got, trace) {
		t.Errorf("scion job logs --trace: %s; file %q (%v), want %q", lr, got, err, trace)
	}
	if !strings.Contains(lr.stdout, "Traceback: boom") || strings.Contains(lr.stdout, "scion-trace-begin") {
		t.Errorf("scion job logs of the failed Job: %q; want its log without the trace block", lr.stdout)
	}
}

// TestSpokeJobRunAcrossHubRestart: the Hub is killed with SIGKILL while
// `scion job run` waits on a running Job, and is down for 6 s (longer
// than the command's longest poll interval, so a poll surely finds it
// gone) before it restarts on the same database and port. The command
// keeps waiting (docs/spokes.md: a Hub restart does not end it), the
// broker's job.update outbox delivers the end after it reconnects, and
// the command prints the result.
func TestSpokeJobRunAcrossHubRestart(t *testing.T) {
	t.Parallel() // before the fixture (see requireKube)
	s := requireSpoke(t)
	ns, tok := spokeNamespace(t, s, "hubkill")
	hub, token, admin := jobsHub(t)
	fleetFile := `
[clusters.pub]
kubeconfig_secret = "SPOKE_KUBECONFIG"
`
	newJobsBroker(t, hub, token, admin, "steady", "fake", fleetFile, map[string][]byte{"SPOKE_KUBECONFIG": s.KubeconfigBytes(s.URL, tok, ns)})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"steady": api.BrokerOnline})
	})
	ag := startFakeAgent(t, admin, "steady", "patient")
	ch := ag.startJobRun(t, 2*time.Minute, "--cluster", "pub", "--image", "busybox", "--env", kube.EnvFakeDuration+"=10s", "--", "train.sh")
	name := spokeJobOfCluster(t, s, ns, ag.id, "pub", time.Minute)
	s.SetJobLog(t, ns, name, "::scion-result:: {\"hub\": \"restarted\"}\n")
	waitPodRunning(t, s, ns, name)
	waitJobMessage(t, ag, hubJobOf(t, name), 30*time.Second, "running")

	hub.proc.Kill9(t)
	killedAt := time.Now()
	<-time.After(6 * time.Second)
	hub.restart(t)
	t.Logf("MEASURED: the Hub was down %v", time.Since(killedAt).Round(time.Millisecond))
	r := <-ch
	t.Logf("MEASURED: scion job run ended %v after the Hub's kill: %s", time.Since(killedAt).Round(time.Millisecond), r)
	if r.code != 0 || compactJSON(r.stdout) != `{"hub":"restarted"}` {
		t.Errorf("scion job run across a Hub restart: %s; want it to keep waiting, exit 0 and print the result", r)
	}
	if j := ag.jobOf(t, hubJobOf(t, name)); j.State != api.JobStateSucceeded || compactJSON(string(j.Result)) != `{"hub":"restarted"}` {
		t.Errorf("job after the Hub's restart: %+v; want succeeded with its result", j)
	}
}
