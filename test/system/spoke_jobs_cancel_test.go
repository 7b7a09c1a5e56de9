package system

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
)

// TestSpokeJobCancelToFrozenBroker: issue 27 item 11. A Job runs on the
// spoke; its broker is frozen (SIGSTOP, socket open). `scion job cancel`
// answers within the bounded wait with the Job cancelling (queued, not
// pending for ever), and the Job reads cancelling while the broker is
// frozen; once it thaws and reconnects, the queued cancel is delivered,
// the broker deletes the Job on the spoke and the Job ends cancelled.
func TestSpokeJobCancelToFrozenBroker(t *testing.T) {
	t.Parallel()
	s := requireSpoke(t)
	ns, tok := spokeNamespace(t, s, "cancel")
	hub, token, admin := jobsHub(t)
	fleetFile := "[clusters.pub]\nkubeconfig_secret = \"SPOKE_PUB_KUBECONFIG\"\nconnect_timeout = \"5s\"\n"
	b := newJobsBroker(t, hub, token, admin, "icy", "fake", fleetFile, map[string][]byte{"SPOKE_PUB_KUBECONFIG": s.KubeconfigBytes(s.URL, tok, ns)})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"icy": api.BrokerOnline})
	})
	ag := startFakeAgent(t, admin, "icy", "trainer")
	r := ag.run(t, time.Minute, "job", "run", "--cluster", "pub", "--image", "busybox", "--env", kube.EnvFakeDuration+"=1h",
		"--detach", "-o", "json", "--", "train.sh")
	var j api.Job
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &j) != nil || j.ID == "" {
		t.Fatalf("scion job run --detach: %s", r)
	}
	name := spokeJobOfCluster(t, s, ns, ag.id, "pub", time.Minute)
	wait.Eventually(t, time.Minute, pollInterval, func() error {
		if st := ag.jobOf(t, j.ID).State; st != api.JobStateRunning {
			return fmt.Errorf("job %s is %s, want running", j.ID, st)
		}
		return nil
	})

	b.proc.Signal(t, syscall.SIGSTOP)
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			_ = syscall.Kill(b.proc.PID, syscall.SIGCONT)
		}
	})
	wait.Eventually(t, 5*time.Second, pollInterval, func() error { return allThreadsStopped(b.proc.PID) })
	start := time.Now()
	out, _, err := admin.scion("job", "cancel", j.ID)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("scion job cancel to a frozen broker: %v", err)
	}
	t.Logf("MEASURED: scion job cancel to a frozen broker answered in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, string(api.JobStateCancelling)) || took > 12*time.Second {
		t.Fatalf("scion job cancel to a frozen broker: %q after %v; want the job cancelling within the bounded wait", out, took)
	}
	var shown api.Job
	admin.mustScionJSON(t, &shown, "job", "show", j.ID)
	if shown.State != api.JobStateCancelling {
		t.Fatalf("job show while the broker is frozen: %s (%s), want cancelling", shown.State, shown.Message)
	}

	thawed = true
	b.proc.Signal(t, syscall.SIGCONT)
	thawAt := time.Now()
	wait.Eventually(t, 45*time.Second, pollInterval, func() error {
		var cur api.Job
		if err := admin.scionJSON(&cur, "job", "show", j.ID); err != nil {
			return err
		}
		if cur.State != api.JobStateCancelled {
			return fmt.Errorf("job %s is %s (%s), want cancelled", j.ID, cur.State, cur.Message)
		}
		return nil
	})
	t.Logf("MEASURED: the queued cancel ended the job %v after the thaw", time.Since(thawAt).Round(time.Millisecond))
	wait.Eventually(t, 15*time.Second, pollInterval, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the Job %s is still on the spoke (%v)", name, err)
	})
}
