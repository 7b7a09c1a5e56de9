package kubernetes_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// unschedulableMessage is what kube-scheduler writes on a pod when the
// only node is cordoned.
const unschedulableMessage = "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."

// TestPendingPodIsNotRunning: an agent whose pod cannot run never reads
// running. On a cluster whose one node is cordoned the scheduler marks
// the pod unschedulable (the fixture has no kube-scheduler, so the test
// writes its PodScheduled condition through pods/status, as the scheduler
// does); the runtime, as its restricted identity, reports pending with
// the scheduler's reason in Start, Inspect, Inventory and its events.
// Bound to a node whose kubelet cannot pull the image, the kubelet's
// reason replaces it; once the container runs, running.
func TestPendingPodIsNotRunning(t *testing.T) {
	n := newNS(t)
	const broker = "broker-pending"
	rt := n.runtimeAs(t, n.brokerIdentity(t, "scion-broker"), broker, nil)
	c := ctx(t)
	node := "cordoned-" + n.name
	if _, err := n.c.Client.CoreV1().Nodes().Create(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: corev1.NodeSpec{Unschedulable: true}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sp := spec(broker, "pend-1")
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatal(err)
	}
	st, err := rt.Start(c, sp.AgentID)
	if err != nil || st.State != runtime.StatePending {
		t.Fatalf("Start = %+v, %v; want pending", st, err)
	}
	kubelet := fakeKubelet{t: t, n: n}

	// The scheduler's verdict.
	pod := kubelet.pod(sp.AgentID)
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: unschedulableMessage, LastTransitionTime: metav1.Now()}}
	if _, err := n.c.Client.CoreV1().Pods(n.name).UpdateStatus(c, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "Unschedulable: " + unschedulableMessage
	ev := waitEventWith(t, rt, sp.AgentID, func(s runtime.Status) bool { return strings.Contains(s.Message, want) })
	if ev.State != runtime.StatePending {
		t.Errorf("event of an unschedulable pod = %+v, want pending", ev)
	}
	if got, err := rt.Inspect(c, sp.AgentID); err != nil || got.State != runtime.StatePending || !strings.Contains(got.Message, want) {
		t.Errorf("Inspect = %+v, %v; want pending with %q", got, err, want)
	}
	inv, err := rt.Inventory(c)
	if err != nil || len(inv) != 1 || inv[0].State != runtime.StatePending || !strings.Contains(inv[0].Message, want) {
		t.Errorf("Inventory = %+v, %v; want the agent pending with %q", inv, err, want)
	}
	// A second Start leaves the pending pod alone and says the same.
	if again, err := rt.Start(c, sp.AgentID); err != nil || again.State != runtime.StatePending || !strings.Contains(again.Message, want) {
		t.Errorf("second Start = %+v, %v", again, err)
	}

	// Scheduled to a node whose kubelet cannot pull the image.
	if err := n.c.Client.CoreV1().Pods(n.name).Bind(c, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const pull = `Back-off pulling image "scion/test-agent:latest": not found`
	kubelet.setStatus(sp.AgentID, corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: pull}})
	ev = waitEventWith(t, rt, sp.AgentID, func(s runtime.Status) bool { return strings.Contains(s.Message, "ImagePullBackOff") })
	if ev.State != runtime.StatePending || !strings.Contains(ev.Message, pull) {
		t.Errorf("event of an image that does not pull = %+v, want pending with the kubelet's message", ev)
	}
	wait.Eventually(t, 30*time.Second, 0, func() error {
		got, err := rt.Inspect(c, sp.AgentID)
		if err != nil || got.State != runtime.StatePending || !strings.Contains(got.Message, "ImagePullBackOff: "+pull) {
			return fmt.Errorf("Inspect = %+v, %v", got, err)
		}
		return nil
	})

	kubelet.run(sp.AgentID)
	if ev := waitEvent(t, rt, sp.AgentID, runtime.StateRunning); ev.Message != "" {
		t.Errorf("running event = %+v, want no reason left", ev)
	}
}

// waitEventWith waits for an event of agent id that ok accepts.
func waitEventWith(t *testing.T, rt runtime.Runtime, id string, ok func(runtime.Status) bool) runtime.Status {
	t.Helper()
	deadline := time.After(time.Minute)
	var seen []runtime.Status
	for {
		select {
		case ev, open := <-rt.Events():
			if !open {
				t.Fatal("Events closed")
			}
			if ev.Status.AgentID == id {
				seen = append(seen, ev.Status)
				if ok(ev.Status) {
					return ev.Status
				}
			}
		case <-deadline:
			t.Fatalf("no such event for %s; saw %+v", id, seen)
		}
	}
}
