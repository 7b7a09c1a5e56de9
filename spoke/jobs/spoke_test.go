package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/spoke/fleet"
)

// onSpoke is a namespace of the spoke fixture bootstrapped as a spoke
// admin does (docs/spoke-bootstrap.yaml), with the broker's clients
// built by spoke/fleet from the kubeconfig it yields: the runner works
// with the least-privilege ServiceAccount, through the typed-error
// transport, exactly as in a broker.
type onSpoke struct {
	spoke *kube.Spoke
	ns    string
	token string
	c     Clients
}

func newOnSpoke(t *testing.T) *onSpoke {
	t.Helper()
	sp := kube.NeedSpoke(t)
	ns := sp.Namespace(t)
	token := sp.BootstrapToken(t, ns)
	kc := sp.KubeconfigBytes(sp.URL, token, ns)
	cfg, _, err := fleet.RESTConfig(&fleet.Cluster{Name: "b200", KubeconfigSecret: "SPOKE_B200_KUBECONFIG"}, kc, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kcs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &onSpoke{spoke: sp, ns: ns, token: token, c: Clients{Kube: kcs, Dynamic: dyn}}
}

func (o *onSpoke) spec(jobID string, env map[string]string) Spec {
	s := testSpec()
	s.JobID, s.Namespace, s.Tier, s.GPUs, s.Env = jobID, o.ns, "public", 0, env
	return s
}

// run submits s and follows it to the end (bounded), returning every
// report; onReport, when set, sees each as it comes.
func (o *onSpoke) run(t *testing.T, s Spec, onReport func(Progress)) (Progress, []Progress) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Submit(ctx, o.c, s); err != nil {
		t.Fatal(err)
	}
	var reports []Progress
	start := time.Now()
	final := Follow(ctx, o.c, s, FollowOptions{PollInterval: 100 * time.Millisecond}, func(p Progress) {
		t.Logf("%6.2fs %s %q", time.Since(start).Seconds(), p.State, p.Message)
		reports = append(reports, p)
		if onReport != nil {
			onReport(p)
		}
	})
	if !final.State.Terminal() {
		t.Fatalf("not over within two minutes: %+v", final)
	}
	return final, reports
}

// TestSpokeJobSucceedsWithResultAndTrace: a Job runs on the spoke's fake
// node to succeeded; its result and trace come through the real pods/log
// path (kwok serves the log file), and the kept log has no trace lines.
func TestSpokeJobSucceedsWithResultAndTrace(t *testing.T) {
	o := newOnSpoke(t)
	s := o.spec("ok-1", nil)
	trace := []byte("profile bytes \x00\x01\x02")
	o.spoke.SetJobLog(t, o.ns, Name(s.JobID), "epoch 1: loss 0.5\nepoch 2: loss 0.1\n"+
		SentinelTraceBegin+"\n"+b64Lines(trace)+SentinelTraceEnd+"\n"+
		"::scion-result:: {\"loss\": 0.1, \"epochs\": 2}\n")
	final, reports := o.run(t, s, nil)
	if final.State != api.JobStateSucceeded || final.Error != nil {
		t.Fatalf("final %+v", final)
	}
	if string(final.Result) != `{"loss":0.1,"epochs":2}` || string(final.Trace) != string(trace) {
		t.Errorf("result %s, trace %q", final.Result, final.Trace)
	}
	if final.ExitCode == nil || *final.ExitCode != 0 || final.StartedAt == nil || final.FinishedAt == nil {
		t.Errorf("exit %v, started %v, finished %v", final.ExitCode, final.StartedAt, final.FinishedAt)
	}
	var logs string
	sawRunning := false
	for _, p := range reports {
		if p.Logs != nil {
			logs = *p.Logs
		}
		sawRunning = sawRunning || p.State == api.JobStateRunning
	}
	if !sawRunning {
		t.Errorf("never reported running: %+v", reports)
	}
	if !strings.Contains(logs, "epoch 2: loss 0.1\n") || strings.Contains(logs, "scion-trace") || !strings.Contains(logs, "::scion-result::") {
		t.Errorf("kept logs %q", logs)
	}
}

// TestSpokeJobFailsWithExitCode: a failing pod's exit code reaches the
// report, the state is failed, and there is no typed error.
func TestSpokeJobFailsWithExitCode(t *testing.T) {
	o := newOnSpoke(t)
	s := o.spec("fail-1", map[string]string{kube.EnvFakeExit: "3"})
	o.spoke.SetJobLog(t, o.ns, Name(s.JobID), "Traceback: boom\n")
	final, _ := o.run(t, s, nil)
	if final.State != api.JobStateFailed || final.ExitCode == nil || *final.ExitCode != 3 || final.Error != nil {
		t.Fatalf("final %+v", final)
	}
	if !strings.Contains(final.Message, "exit code 3") {
		t.Errorf("message %q", final.Message)
	}
}

// TestSpokeJobQueuedThenAdmitted: a Job with a queue waits suspended;
// the report names the queue and Kueue's word on its Workload; once the
// Admitter lets it in it runs to succeeded.
func TestSpokeJobQueuedThenAdmitted(t *testing.T) {
	o := newOnSpoke(t)
	a := o.spoke.StartAdmitter(t, o.ns)
	a.Hold(true)
	s := o.spec("queued-1", nil)
	s.Queue = "h200"
	var queuedMsg string
	final, reports := o.run(t, s, func(p Progress) {
		if p.State == api.JobStateQueued && strings.Contains(p.Message, "held by the test's Admitter") {
			queuedMsg = p.Message
			a.Hold(false)
		}
	})
	if final.State != api.JobStateSucceeded {
		t.Fatalf("final %+v (admitter: %v)", final, a.Err())
	}
	if !strings.Contains(queuedMsg, "waiting for admission in queue h200: pending: held by the test's Admitter") {
		t.Errorf("queued message %q; reports %+v", queuedMsg, reports)
	}
	order := []api.JobState{}
	for _, p := range reports {
		if len(order) == 0 || order[len(order)-1] != p.State {
			order = append(order, p.State)
		}
	}
	if len(order) < 3 || order[0] != api.JobStateQueued || order[len(order)-1] != api.JobStateSucceeded {
		t.Errorf("states %v", order)
	}
}

// TestSpokeJobDeadlineExceeded: a Job that runs past its
// activeDeadlineSeconds is stopped by the spoke and reported failed with
// a message that says so.
func TestSpokeJobDeadlineExceeded(t *testing.T) {
	o := newOnSpoke(t)
	s := o.spec("slow-1", map[string]string{kube.EnvFakeDuration: "10m"})
	s.Deadline = 2 * time.Second
	final, _ := o.run(t, s, nil)
	if final.State != api.JobStateFailed || !strings.Contains(final.Message, "deadline of 2s passed") || final.Error != nil {
		t.Fatalf("final %+v", final)
	}
}

// TestSpokeJobLiveLogsAndCancel: the log snapshot follows a running
// Job's log as it grows, and a cancel deletes the Job (and, by the
// garbage collector, its pod), which the follow reports as cancelled.
func TestSpokeJobLiveLogsAndCancel(t *testing.T) {
	o := newOnSpoke(t)
	s := o.spec("live-1", map[string]string{kube.EnvFakeDuration: "10m"})
	name := Name(s.JobID)
	o.spoke.SetJobLog(t, o.ns, name, "line 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	step := 0
	var logs []string
	final, _ := o.run(t, s, func(p Progress) {
		if p.Logs == nil {
			return
		}
		logs = append(logs, *p.Logs)
		switch {
		case step == 0 && *p.Logs == "line 1\n":
			step = 1
			o.spoke.AppendJobLog(t, o.ns, name, "line 2\n")
		case step == 1 && *p.Logs == "line 1\nline 2\n":
			step = 2
			if err := Cancel(ctx, o.c, s.Namespace, s.JobID); err != nil {
				t.Error(err)
			}
		}
	})
	if step != 2 {
		t.Fatalf("log snapshots %q", logs)
	}
	if final.State != api.JobStateCancelled {
		t.Fatalf("final %+v", final)
	}
	// The garbage collector deletes the pod.
	for {
		l, err := o.spoke.Client.CoreV1().Pods(o.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelPodJobName + "=" + name})
		if err == nil && len(l.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pod outlived its cancelled Job: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestSpokeSweepSparesAdmittedAndOthers: on a spoke with Kueue held, a
// broker's sweep deletes its queued Job only: not its running one, not
// another broker's queued one; Owned finds its running one.
func TestSpokeSweepSparesAdmittedAndOthers(t *testing.T) {
	o := newOnSpoke(t)
	a := o.spoke.StartAdmitter(t, o.ns)
	a.Hold(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mine := o.spec("mine-queued", nil)
	mine.Queue = "h200"
	theirs := o.spec("theirs-queued", nil)
	theirs.Queue, theirs.BrokerID = "h200", "broker-b"
	running := o.spec("mine-running", map[string]string{kube.EnvFakeDuration: "10m"})
	for _, s := range []Spec{mine, theirs, running} {
		if err := Submit(ctx, o.c, s); err != nil {
			t.Fatal(err)
		}
	}
	swept, err := Sweep(ctx, o.c, o.ns, mine.BrokerID, mine.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 1 || swept[0] != Name(mine.JobID) {
		t.Errorf("swept %v", swept)
	}
	owned, err := Owned(ctx, o.c, o.ns, mine.BrokerID, mine.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) != 1 || owned[0].JobID != running.JobID {
		t.Errorf("owned %+v", owned)
	}
	if _, err := o.spoke.Client.BatchV1().Jobs(o.ns).Get(ctx, Name(theirs.JobID), metav1.GetOptions{}); err != nil {
		t.Errorf("another broker's queued Job: %v", err)
	}
}
