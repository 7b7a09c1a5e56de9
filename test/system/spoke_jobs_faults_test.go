package system

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/testenv/proxy"
	"github.com/scion-go/scion/internal/testenv/sshd"
	"github.com/scion-go/scion/internal/wait"
)

// TestSpokeJobSurvivesTunnelCut: on the bastion tier, the whole bastion
// (Debian's sshd: its listener and the session serving the broker's
// tunnel) is frozen with SIGSTOP while a Job runs.
//
//   - A 5 s cut mid-poll: the status polls fail (the tunnel's keepalives
//     go unanswered, reconnects stall in the SSH handshake), the Job's
//     message says the spoke is unreachable and retried, and once the
//     bastion thaws the poll resumes: the Job ends succeeded with its
//     result.
//   - A cut longer than the Job's deadline (15 s) and the cluster's
//     status_retry (20 s): the Job is given up with the typed error
//     {"status":"error","cluster":"bast","tier":"bastion"}, which
//     `scion job run` prints, while the bastion is still frozen.
func TestSpokeJobSurvivesTunnelCut(t *testing.T) {
	t.Parallel() // before the fixture (see requireKube)
	s := requireSpoke(t)
	bast := startBastion(t)
	ns, admin := bastionJobsBroker(t, s, bast, "cut", "cutter", "3s", "20s")
	ag := startFakeAgent(t, admin, "cutter", "measurer")

	t.Run("5s cut mid-poll", func(t *testing.T) {
		ch := ag.startJobRun(t, 2*time.Minute, "--cluster", "bast", "--image", "busybox",
			"--env", kube.EnvFakeDuration+"=15s", "--", "measure.sh")
		name := spokeJobOfCluster(t, s, ns, ag.id, "bast", time.Minute)
		s.SetJobLog(t, ns, name, "step 1\n::scion-result:: {\"survived\": true}\n")
		waitPodRunning(t, s, ns, name)
		id := hubJobOf(t, name)
		waitJobMessage(t, ag, id, 30*time.Second, "pod")

		thaw := bast.freeze(t)
		cutAt := time.Now()
		retried := wait.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
			if j := ag.jobOf(t, id); !strings.Contains(j.Message, "spoke unreachable (retrying)") {
				return fmt.Errorf("job %s: %s: %s", id, j.State, j.Message)
			}
			return nil
		})
		t.Logf("MEASURED: the Job's message said the spoke is unreachable and retried %v into the cut", retried.Round(time.Millisecond))
		// The cut itself: the bastion stays frozen for 5 s.
		<-time.After(time.Until(cutAt.Add(5 * time.Second)))
		thaw()
		thawedAt := time.Now()
		resumed := wait.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
			if j := ag.jobOf(t, id); strings.Contains(j.Message, "spoke unreachable") {
				return fmt.Errorf("job %s: %s: %s", id, j.State, j.Message)
			}
			return nil
		})
		t.Logf("MEASURED: the poll resumed (the message moved on) %v after the 5 s cut ended", resumed.Round(time.Millisecond))

		r := <-ch
		t.Logf("MEASURED: the Job ended %v after the thaw; scion job run took %v", time.Since(thawedAt).Round(time.Millisecond), r.took.Round(time.Millisecond))
		if r.code != 0 || compactJSON(r.stdout) != `{"survived":true}` || !strings.Contains(r.stderr, "spoke unreachable (retrying)") {
			t.Fatalf("scion job run across the cut: %s; want exit 0, the result, and the retry among its progress lines", r)
		}
		if j := ag.jobOf(t, id); j.State != api.JobStateSucceeded || j.Tier != "bastion" || j.Error != nil {
			t.Errorf("job %s after the cut: %+v; want succeeded on the bastion tier, no error", id, j)
		}
	})

	t.Run("cut past the deadline", func(t *testing.T) {
		// Another agent: its Job is the only one labelled with it.
		ag := startFakeAgent(t, admin, "cutter", "measurer-2")
		const deadline = 15 * time.Second
		ch := ag.startJobRun(t, 3*time.Minute, "--cluster", "bast", "--image", "busybox", "--deadline", deadline.String(),
			"--env", kube.EnvFakeDuration+"=90s", "--", "measure.sh", "--long")
		name := spokeJobOfCluster(t, s, ns, ag.id, "bast", time.Minute)
		waitPodRunning(t, s, ns, name)
		thaw := bast.freeze(t)
		defer thaw()
		cutAt := time.Now()
		var r cliResult
		select {
		case r = <-ch:
		case <-time.After(time.Minute):
			t.Fatal("scion job run did not end within a minute of a cut that outlasts the Job's deadline and status_retry")
		}
		took := time.Since(cutAt)
		t.Logf("MEASURED: with the bastion frozen, scion job run ended with the typed error %v into the cut (deadline 15s, status_retry 20s)", took.Round(time.Millisecond))
		if r.code != 1 || !strings.Contains(r.stdout, `"status": "error"`) || !strings.Contains(r.stdout, `"cluster": "bast"`) ||
			!strings.Contains(r.stdout, `"tier": "bastion"`) || !strings.Contains(r.stdout, "unreachable") {
			t.Fatalf("scion job run through a cut past its deadline: %s; want exit 1 and the typed error naming cluster bast and tier bastion", r)
		}
		if took < 20*time.Second {
			t.Errorf("given up %v into the cut, before status_retry (20s)", took)
		}
		j := ag.jobOf(t, jobIDOf(r.stderr))
		if j.State != api.JobStateError || j.Error == nil || j.Error.Cluster != "bast" || j.Error.Tier != "bastion" || j.Error.Status != "error" {
			t.Errorf("job after a cut past its deadline: %+v; want state error with the typed error", j)
		}
	})
}

// TestSpokeUnreachablePerTier: per tier, clusters that cannot be reached
// (a closed port, a listener that accepts and never answers) with
// connect_timeout = "2s": `scion job run` ends with the typed error
// {"status":"error","cluster","tier","message"} within the timeout plus a
// margin, never a hang.
func TestSpokeUnreachablePerTier(t *testing.T) {
	t.Parallel()
	// Serial: it bounds how long each tier takes to give up (7-9 s), which
	// the parallel tests' load pushed to 18-24 s on a loaded machine.
	s := requireSpoke(t)
	ns, tok := spokeNamespace(t, s, "unreach")
	hub, token, admin := jobsHub(t)
	hole, closed := blackhole(t), closedPort(t)
	_, holePort, _ := strings.Cut(hole, ":")
	type unreachable struct {
		cluster, tier string
		steps         int // the connect steps the tier has (dial, proxy answer or SSH handshake, TLS)
		block         string
	}
	// A real tinyproxy that answers, but refuses CONNECT to the spoke's
	// port (403): a proxy's policy, not the network.
	strict := proxy.Start(t, spokePort(t, s)+1)
	known := "[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	cases := []unreachable{
		{"pub-closed", "public", 2, `kubeconfig_secret = "KC_CLOSED"`},
		{"pub-hole", "public", 2, `kubeconfig_secret = "KC_HOLE"`},
		{"dark-hole", "host_aliases", 2, fmt.Sprintf("kubeconfig_secret = \"KC_DARK_HOLE\"\nhost_aliases = { %q = \"127.0.0.1\" }", kube.DarkHost)},
		{"prox-dead", "proxy", 3, fmt.Sprintf("kubeconfig_secret = \"KC\"\nproxy_url = \"http://%s\"", closed)},
		{"prox-hole", "proxy", 3, fmt.Sprintf("kubeconfig_secret = \"KC\"\nproxy_url = \"http://%s\"", hole)},
		{"prox-refuses", "proxy", 3, fmt.Sprintf("kubeconfig_secret = \"KC\"\nproxy_url = %q", strict.URL)},
		{"bast-dead", "bastion", 3, fmt.Sprintf("kubeconfig_secret = \"KC\"\n[clusters.bast-dead.bastion]\nhost = %q\nuser = \"root\"\nkey_secret = \"SSH_KEY\"\nknown_hosts = %q", closed, known)},
		{"bast-hole", "bastion", 3, fmt.Sprintf("kubeconfig_secret = \"KC\"\n[clusters.bast-hole.bastion]\nhost = %q\nuser = \"root\"\nkey_secret = \"SSH_KEY\"\nknown_hosts = %q", hole, known)},
	}
	var fleetFile strings.Builder
	for _, c := range cases {
		// connect_timeout before the block's bastion sub-table.
		fmt.Fprintf(&fleetFile, "[clusters.%s]\nconnect_timeout = \"2s\"\nrequest_timeout = \"5s\"\n%s\n\n", c.cluster, c.block)
	}
	_, key := sshd.NewKey(t)
	b := newJobsBroker(t, hub, token, admin, "dark", "fake", fleetFile.String(), map[string][]byte{
		"KC":           s.KubeconfigBytes(s.URL, tok, ns),
		"KC_CLOSED":    s.KubeconfigBytes("https://"+closed, tok, ns),
		"KC_HOLE":      s.KubeconfigBytes("https://"+hole, tok, ns),
		"KC_DARK_HOLE": s.KubeconfigBytes("https://"+kube.DarkHost+":"+holePort, tok, ns),
		"SSH_KEY":      key,
	})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"dark": api.BrokerOnline})
	})
	ag := startFakeAgent(t, admin, "dark", "prober")
	// A Job waits for its cluster's startup sweep: let every sweep end
	// (each fails on its unreachable spoke) so that only the run is timed.
	for _, c := range cases {
		waitBrokerLogAny(t, b.proc, time.Minute, "cluster="+c.cluster,
			"startup sweep: spoke not opened", "startup: running jobs not listed")
	}

	runs := map[string]<-chan cliResult{}
	for _, c := range cases {
		runs[c.cluster] = ag.startJobRun(t, time.Minute, "--cluster", c.cluster, "--image", "busybox", "--", "true")
	}
	const connectTimeout = 2 * time.Second
	for _, c := range cases {
		r := <-runs[c.cluster]
		bound := time.Duration(c.steps)*connectTimeout + 3*time.Second
		var e api.JobError
		err := json.Unmarshal([]byte(r.stdout), &e)
		t.Logf("MEASURED: %s (%s, %d steps): scion job run answered in %v (bound %v): %s", c.cluster, c.tier, c.steps, r.took.Round(time.Millisecond), bound, e.Message)
		if err != nil || r.code != 1 || e.Status != "error" || e.Cluster != c.cluster || e.Tier != c.tier || e.Message == "" {
			t.Errorf("%s: %s; want exit 1 and {\"status\":\"error\",\"cluster\":%q,\"tier\":%q,\"message\":...} on stdout", c.cluster, r, c.cluster, c.tier)
		}
		if c.cluster == "prox-refuses" && !strings.Contains(e.Message, "refused CONNECT to 127.0.0.1:"+strconv.Itoa(spokePort(t, s))+": 403 Access violation") {
			t.Errorf("%s: message %q; want the proxy's refusal with its status", c.cluster, e.Message)
		}
		if id := jobIDOf(r.stderr); id == "" {
			t.Errorf("%s: no Job ID in scion job run's progress lines: %s", c.cluster, r)
		} else if cl, tier, state := ledgerRow(t, hub, id); cl != c.cluster || tier != c.tier || state != string(api.JobStateError) {
			t.Errorf("%s: ledger row: cluster %q tier %q state %q; want %s, %s, error", c.cluster, cl, tier, state, c.cluster, c.tier)
		}
		if r.took > bound {
			t.Errorf("%s (%s): scion job run took %v to give up, more than %v", c.cluster, c.tier, r.took.Round(time.Millisecond), bound)
		}
	}
}

// waitPodRunning waits until Job name's pod runs on the spoke.
func waitPodRunning(t *testing.T, s *kube.Spoke, ns, name string) {
	t.Helper()
	wait.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := s.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil {
			return err
		}
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				return nil
			}
		}
		var phases []string
		for _, p := range l.Items {
			phases = append(phases, fmt.Sprintf("%s: %s %s", p.Name, p.Status.Phase, p.Status.Reason))
		}
		return fmt.Errorf("no running pod of job %s: %v", name, phases)
	})
}

// spokeJob reads Job name on the spoke as its admin.
func spokeJob(s *kube.Spoke, ns, name string) (*batchv1.Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
}

// hubJobOf is the Hub's Job ID of the spoke's Job name, from its label.
func hubJobOf(t *testing.T, name string) string {
	t.Helper()
	id, ok := strings.CutPrefix(name, "scion-job-")
	if !ok {
		t.Fatalf("spoke job %s is not named after a Hub Job", name)
	}
	return id
}

// waitJobMessage waits until the agent sees Job id's message hold part.
func waitJobMessage(t *testing.T, ag *jobAgent, id string, timeout time.Duration, part string) {
	t.Helper()
	wait.Eventually(t, timeout, 100*time.Millisecond, func() error {
		if j := ag.jobOf(t, id); !strings.Contains(j.Message, part) {
			return fmt.Errorf("job %s: %s: %q", id, j.State, j.Message)
		}
		return nil
	})
}

// waitBrokerLogAny waits for a broker log line holding must and any one
// of alternatives.
func waitBrokerLogAny(t *testing.T, p *Proc, timeout time.Duration, must string, alternatives ...string) {
	t.Helper()
	wait.Eventually(t, timeout, 100*time.Millisecond, func() error {
		for _, a := range alternatives {
			if logLine(p, must, a) != "" {
				return nil
			}
		}
		return fmt.Errorf("%s logged no line with %q and one of %q", p.Name, must, alternatives)
	})
}
