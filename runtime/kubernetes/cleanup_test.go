package kubernetes_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// projectClaims lists the claims of the project scope in the namespace.
func projectClaims(t *testing.T, n ns) []string {
	t.Helper()
	l, err := n.c.Client.CoreV1().PersistentVolumeClaims(n.name).List(ctx(t), metav1.ListOptions{LabelSelector: "scion.claim_scope=project"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range l.Items {
		if c.DeletionTimestamp == nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestCleanupProjectRemovesItsClaims: once a shared-workspace project's
// agents are deleted, its RWX workspace claim (and its shared directory's)
// stays; CleanupProject, run with the broker's own Role, removes them and
// names them, leaves another project's claim alone, and is a no-op the
// second time.
func TestCleanupProjectRemovesItsClaims(t *testing.T) {
	n := newNS(t)
	c := ctx(t)
	const broker = "broker-cleanup"
	rt := n.runtimeAs(t, n.brokerIdentity(t, "scion-broker"), broker, func(o *k8srt.Options) {
		o.Defaults.SharedDirSize = "1Gi"
	})
	mine := spec(broker, "cl-1")
	mine.ProjectID = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	mine.Labels[k8srt.LabelSharingMode] = "shared-workspace"
	other := spec(broker, "cl-2")
	other.ProjectID = "0190a1b2-c3d4-7e5f-8a9b-ffffffffffff"
	other.Labels[k8srt.LabelSharingMode] = "shared-workspace"
	for _, sp := range []runtime.Spec{mine, other} {
		if _, err := rt.Create(c, sp); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Start(c, sp.AgentID); err != nil {
			t.Fatal(err)
		}
	}
	before := projectClaims(t, n)
	if len(before) != 4 {
		t.Fatalf("project claims of two shared-workspace projects = %v, want a workspace and a shared directory each", before)
	}
	if err := rt.Delete(c, mine.AgentID); err != nil {
		t.Fatal(err)
	}
	if got := projectClaims(t, n); len(got) != 4 {
		t.Fatalf("an agent's Delete removed project claims: %v", got)
	}

	removed, err := rt.CleanupProject(c, mine.ProjectID)
	if err != nil {
		t.Fatalf("CleanupProject: %v", err)
	}
	if len(removed) != 2 {
		t.Fatalf("CleanupProject removed %v, want the project's workspace and shared-directory claims", removed)
	}
	for _, r := range removed {
		if !strings.HasPrefix(r, n.name+"/") {
			t.Errorf("removed %q is not namespace/name in %s", r, n.name)
		}
	}
	wait.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		left := projectClaims(t, n)
		gone := true
		for _, r := range removed {
			gone = gone && !slices.Contains(left, strings.TrimPrefix(r, n.name+"/"))
		}
		if !gone || len(left) != 2 {
			return fmt.Errorf("claims left %v, want the project's gone and the other project's two", left)
		}
		return nil
	})
	// The other project's agent still has its claims.
	if st, err := rt.Inspect(c, other.AgentID); err != nil || st.State != runtime.StatePending {
		t.Fatalf("the other project's agent after the cleanup = %+v, %v", st, err)
	}
	if again, err := rt.CleanupProject(c, mine.ProjectID); err != nil || len(again) != 0 {
		t.Fatalf("a second CleanupProject = %v, %v; want nothing removed", again, err)
	}
}

// TestPodDeletedBehindTheBrokerReadsExited: an agent whose pod someone
// deleted while the broker was down is exited (the Hub shows it stopped)
// after the broker restarts, with the reason, not "created" as if it had
// never been started; it can be started again.
func TestPodDeletedBehindTheBrokerReadsExited(t *testing.T) {
	n := newNS(t)
	c := ctx(t)
	const broker = "broker-gone"
	id := n.brokerIdentity(t, "scion-broker")
	rt := n.runtimeAs(t, id, broker, nil)
	sp := spec(broker, "gone-1")
	never := spec(broker, "gone-2")
	for _, s := range []runtime.Spec{sp, never} {
		if _, err := rt.Create(c, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Start(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	pods, err := n.c.Client.CoreV1().Pods(n.name).List(c, metav1.ListOptions{LabelSelector: runtime.LabelAgentID + "=" + sp.AgentID})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the agent's pod: %v, %v", pods, err)
	}
	if err := n.c.Client.CoreV1().Pods(n.name).Delete(c, pods.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, time.Minute, 20*time.Millisecond, func() error {
		l, err := n.c.Client.CoreV1().Pods(n.name).List(c, metav1.ListOptions{LabelSelector: runtime.LabelAgentID + "=" + sp.AgentID})
		if err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return fmt.Errorf("%d pods of the agent left, want the pod gone", len(l.Items))
		}
		return nil
	})

	rt2 := n.runtimeAs(t, id, broker, nil)
	inv, err := rt2.Inventory(c)
	if err != nil || len(inv) != 2 {
		t.Fatalf("Inventory after restart = %+v, %v", inv, err)
	}
	for _, st := range inv {
		switch st.AgentID {
		case sp.AgentID:
			if st.State != runtime.StateExited || !strings.Contains(st.Message, "deleted outside scion") {
				t.Errorf("agent whose pod was deleted = %s %q, want exited saying its pod was deleted outside scion", st.State, st.Message)
			}
		case never.AgentID:
			if st.State != runtime.StateCreated {
				t.Errorf("agent never started = %s, want created", st.State)
			}
		}
	}
	if st, err := rt2.Inspect(c, sp.AgentID); err != nil || st.State != runtime.StateExited {
		t.Fatalf("Inspect = %+v, %v; want exited", st, err)
	}
	// Stop of such an agent is a no-op that keeps the answer.
	if st, err := rt2.Stop(c, sp.AgentID, 0); err != nil || st.State != runtime.StateExited {
		t.Fatalf("Stop = %+v, %v; want exited", st, err)
	}
	if st, err := rt2.Start(c, sp.AgentID); err != nil || st.State != runtime.StatePending || st.Message == "deleted outside scion" {
		t.Fatalf("Start again = %+v, %v", st, err)
	}
}
