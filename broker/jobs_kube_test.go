package broker

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"
)

// embeddedKubeconfig is a spoke kubeconfig as the Hub secret holds it.
func embeddedKubeconfig(server string, ca []byte, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: spoke
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: sa
  user: {token: %s}
contexts:
- name: spoke
  context: {cluster: spoke, user: sa}
current-context: spoke
`, server, base64.StdEncoding.EncodeToString(ca), token)
}

// TestJobOnKubeFixture runs the real path on the kube-apiserver fixture
// (public tier): the real spoke pool and runner, secrets from the
// broker's Secrets. At start the broker sweeps its suspended leftover
// (and not another broker's), while a dead spoke in the fleet blocks
// nothing; job.run creates the Job in the block's namespace, labelled
// and unsuspended (no queue); job.cancel deletes it and the Hub hears
// cancelled. The fixture has no Job controller, so the Job does not run.
func TestJobOnKubeFixture(t *testing.T) {
	kc := kube.StartForTest(t)
	ns := kc.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hub := newTestHub(t)
	admin := jobs.Clients{Kube: kc.Client}
	leftover := jobs.Spec{JobID: "leftover", AgentID: "a0", BrokerID: hub.brokerID, Cluster: "gpu", Tier: "public",
		Namespace: ns, Queue: "q", Image: "busybox", Command: []string{"true"}, Deadline: time.Minute}
	other := leftover
	other.JobID, other.BrokerID = "others", "broker-2"
	for _, s := range []jobs.Spec{leftover, other} {
		if err := jobs.Submit(ctx, admin, s); err != nil { // a queue: it stays suspended
			t.Fatal(err)
		}
	}

	f, err := fleet.Parse("clusters.toml", fmt.Appendf(nil, "[clusters.gpu]\nkubeconfig_secret = \"GPU_KC\"\nnamespace = %q\n[clusters.dead]\nkubeconfig_secret = \"DEAD_KC\"\n", ns))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		"GPU_KC":  embeddedKubeconfig(kc.URL, kc.CAPEM(), kc.Admin.BearerToken),
		"DEAD_KC": embeddedKubeconfig("https://127.0.0.1:1", kc.CAPEM(), "t"),
	}
	rt := fake.New()
	if _, err := rt.Create(t.Context(), runtime.Spec{AgentID: "a1", ProjectID: "p1", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, hub, rt, func(c *Config) {
		c.Jobs = JobsConfig{Fleet: f, Secrets: func(_ context.Context, name string) (string, error) {
			if v, ok := secrets[name]; ok {
				return v, nil
			}
			return "", api.NotFound(api.CodeSecretNotFound, "secret %s not found", name)
		}}
	})
	waitConnected(t, b)

	var acc wire.JobAccepted
	if err := hub.call(wire.MethodJobRun, jobRun("j1", "a1", "gpu", ""), &acc); err != nil {
		t.Fatal(err)
	}
	if acc != (wire.JobAccepted{Cluster: "gpu", Tier: "public", Namespace: ns, Name: "scion-job-j1"}) {
		t.Fatalf("accepted %+v", acc)
	}
	jobsAPI := kc.Client.BatchV1().Jobs(ns)
	poll := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for %s", what)
			case <-time.After(50 * time.Millisecond): // polling the API server
			}
		}
	}
	poll("the Job, unsuspended", func() bool {
		j, err := jobsAPI.Get(ctx, "scion-job-j1", metav1.GetOptions{})
		return err == nil && j.Spec.Suspend != nil && !*j.Spec.Suspend &&
			j.Labels[jobs.LabelBroker] == hub.brokerID && j.Labels[jobs.LabelJobID] == "j1" && j.Labels[jobs.LabelCluster] == "gpu"
	})
	poll("the sweep of the leftover", func() bool {
		_, err := jobsAPI.Get(ctx, jobs.Name("leftover"), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := jobsAPI.Get(ctx, jobs.Name("others"), metav1.GetOptions{}); err != nil {
		t.Fatalf("another broker's suspended Job: %v", err)
	}

	if err := hub.call(wire.MethodJobCancel, wire.JobRef{JobID: "j1"}, nil); err != nil {
		t.Fatal(err)
	}
	// The swept leftover's end is reported too (its ledger row would
	// wait forever otherwise).
	cancelled, swept := false, false
	for !cancelled || !swept {
		u := recv(t, hub.jobUpdates, "the cancelled update and the swept leftover's")
		switch {
		case u.JobID == "leftover":
			if u.State != api.JobStateError || u.Error == nil || u.Error.Cluster != "gpu" {
				t.Fatalf("the swept leftover's update: %+v", u)
			}
			swept = true
		case u.JobID == "j1" && u.State == api.JobStateCancelled:
			cancelled = true
		case u.State.Terminal():
			t.Fatalf("terminal update before cancelled: %+v", u)
		}
	}
	poll("the Job's deletion", func() bool {
		j, err := jobsAPI.Get(ctx, "scion-job-j1", metav1.GetOptions{})
		// No garbage collector runs: a background delete leaves the Job
		// marked for deletion, or gone.
		return apierrors.IsNotFound(err) || (err == nil && j.DeletionTimestamp != nil)
	})
}
