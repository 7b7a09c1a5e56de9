package broker

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/wire"
)

// TestJobRunnerLogsThroughTheBrokersLogger: the real runner's lines go
// to the broker's logger, with broker_id, once each. They went to
// slog.Default as well (Go's default log format, no broker_id), and the
// end of a Job was logged twice.
func TestJobRunnerLogsThroughTheBrokersLogger(t *testing.T) {
	kc := kube.StartForTest(t)
	ns := kc.Namespace(t)
	var defaults, logs syncBuffer
	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(slog.NewTextHandler(&defaults, nil)))
	t.Cleanup(func() { slog.SetDefault(prev); log.SetOutput(prevOut); log.SetFlags(prevFlags) })

	hub := newTestHub(t)
	f, err := fleet.Parse("clusters.toml", fmt.Appendf(nil, "[clusters.gpu]\nkubeconfig_secret = \"GPU_KC\"\nnamespace = %q\n", ns))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := embeddedKubeconfig(kc.URL, kc.CAPEM(), kc.Admin.BearerToken)
	rt := fake.New()
	if _, err := rt.Create(t.Context(), runtime.Spec{AgentID: "a1", ProjectID: "p1", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, hub, rt, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Jobs = JobsConfig{Fleet: f, Secrets: func(context.Context, string) (string, error) { return kubeconfig, nil }}
	})
	waitConnected(t, b)
	if err := hub.call(wire.MethodJobRun, jobRun("j1", "a1", "gpu", ""), nil); err != nil {
		t.Fatal(err)
	}
	// Wait until the Job is there, then delete it behind the broker's
	// back: its follow ends it cancelled, and the runner says so.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobsAPI := kc.Client.BatchV1().Jobs(ns)
	for {
		if _, err := jobsAPI.Get(ctx, "scion-job-j1", metav1.GetOptions{}); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the Job was not submitted")
		case <-time.After(50 * time.Millisecond): // polling the API server
		}
	}
	bg := metav1.DeletePropagationBackground
	if err := jobsAPI.Delete(ctx, "scion-job-j1", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	for {
		u := recv(t, hub.jobUpdates, "the cancelled update")
		if u.JobID == "j1" && u.State == api.JobStateCancelled {
			break
		}
	}
	finished := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "job=j1") && strings.Contains(l, `msg="job finished"`) {
				out = append(out, l)
			}
		}
		return out
	}
	// The runner logs the end after its report.
	wait.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if len(finished()) == 0 {
			return fmt.Errorf("no job finished line:\n%s", logs.String())
		}
		return nil
	})
	wait.Consistently(t, 300*time.Millisecond, 20*time.Millisecond, func() error {
		if d := defaults.String(); d != "" {
			return fmt.Errorf("lines through slog.Default:\n%s", d)
		}
		if f := finished(); len(f) != 1 || !strings.Contains(f[0], "broker_id="+hub.brokerID) || !strings.Contains(f[0], "cluster=gpu") {
			return fmt.Errorf("the job's end, once with broker_id: %q", f)
		}
		return nil
	})
}

// TestAmbientSweepWithoutJobsGrant: a Kubernetes broker set up with the
// runtime's Role alone (docs/kubernetes.md) may not list Jobs on its own
// cluster. Its start says once, at info, that Jobs there need the
// scion-jobs Role, instead of two warnings at every start.
func TestAmbientSweepWithoutJobsGrant(t *testing.T) {
	kc := kube.StartForTest(t)
	ns := kc.Namespace(t)
	hub := newTestHub(t)
	var logs syncBuffer
	b := startBroker(t, hub, fake.New(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Jobs = JobsConfig{Fleet: &fleet.Fleet{}, Ambient: kc.ConfigFor("scion-broker-token"), AmbientNamespace: ns}
	})
	waitConnected(t, b)
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), "scion-jobs Role") {
			return fmt.Errorf("no line about the grant:\n%s", logs.String())
		}
		return nil
	})
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") {
			t.Errorf("a warning: %s", l)
		}
		if strings.Contains(l, "scion-jobs Role") && (!strings.Contains(l, "level=INFO") || !strings.Contains(l, "cluster=ambient") || !strings.Contains(l, "namespace="+ns)) {
			t.Errorf("the grant's line: %s", l)
		}
	}
}
