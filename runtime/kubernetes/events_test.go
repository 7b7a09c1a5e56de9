package kubernetes_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// TestStatusFromWatches plays the kubelet's part by writing pod status
// through the API server (pods/status, as a kubelet does) and checks that
// the runtime's pod watch turns it into Events and Inspect answers: the
// agent's exit with its code, a pod deleted by someone else, and the same
// for a new runtime of the broker (a restart) that adopts the agents.
func TestStatusFromWatches(t *testing.T) {
	n := newNS(t)
	const broker = "broker-events"
	rt := n.runtimeAs(t, n.brokerIdentity(t, "scion-broker"), broker, nil)
	c := ctx(t)
	sp := spec(broker, "ev-1")
	if _, err := rt.Create(c, sp); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, rt, sp.AgentID, runtime.StatePending)

	kubelet := fakeKubelet{t: t, n: n}
	kubelet.run(sp.AgentID)
	kubelet.exit(sp.AgentID, 7)
	st := waitEvent(t, rt, sp.AgentID, runtime.StateExited)
	if st.ExitCode == nil || *st.ExitCode != 7 || st.Labels[runtime.LabelRunID] != sp.RunID {
		t.Fatalf("exit event = %+v, want code 7 with the agent's labels", st)
	}
	if got, err := rt.Inspect(c, sp.AgentID); err != nil || got.State != runtime.StateExited || got.ExitCode == nil || *got.ExitCode != 7 {
		t.Fatalf("Inspect after exit = %+v, %v", got, err)
	}
	// Stop of an agent that ended by itself keeps its pod (and output).
	if st, err := rt.Stop(c, sp.AgentID, time.Second); err != nil || *st.ExitCode != 7 {
		t.Fatalf("Stop of an exited agent = %+v, %v", st, err)
	}
	if kubelet.pod(sp.AgentID) == nil {
		t.Fatal("Stop deleted the finished pod")
	}

	// Start again: a new pod replaces the finished one.
	if st, err := rt.Start(c, sp.AgentID); err != nil || st.State != runtime.StatePending || st.ExitCode != nil {
		t.Fatalf("Start after exit = %+v, %v", st, err)
	}
	kubelet.run(sp.AgentID)
	// Start deleted the finished pod itself: that is no exit to report.
	// The watch delivers in order, so the next exit is a fence.
	kubelet.exit(sp.AgentID, 9)
	sawRunning := false
	for _, ev := range eventsUntil(t, rt, sp.AgentID, 9) {
		sawRunning = sawRunning || ev.State == runtime.StateRunning
		if ev.State == runtime.StateExited && *ev.ExitCode != 9 {
			t.Errorf("Start's own deletion of the old pod reported as %+v", ev)
		}
	}
	if !sawRunning {
		t.Error("no running event after the second Start")
	}
	if _, err := rt.Start(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	kubelet.run(sp.AgentID)

	// A broker restart: a new runtime finds the agent and watches it.
	rt.Close()
	rt2 := n.runtimeAs(t, n.c.Admin, broker, nil)
	inv, err := rt2.Inventory(c)
	if err != nil || len(inv) != 1 || inv[0].State != runtime.StateRunning || inv[0].RunID != sp.RunID {
		t.Fatalf("Inventory after restart = %+v, %v", inv, err)
	}
	// Someone deletes the pod by hand: reported as the agent's exit.
	if err := n.c.Client.CoreV1().Pods(n.name).Delete(c, kubelet.pod(sp.AgentID).Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	st = waitEvent(t, rt2, sp.AgentID, runtime.StateExited)
	if !strings.Contains(st.Message, "deleted outside scion") {
		t.Errorf("event of an outside deletion = %+v", st)
	}
	if _, err := rt2.Start(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	if err := rt2.Delete(c, sp.AgentID); err != nil {
		t.Fatal(err)
	}
	// Nothing about a deleted agent follows its Delete: another agent's
	// exit is the fence.
	other := spec(broker, "ev-2")
	if _, err := rt2.Create(c, other); err != nil {
		t.Fatal(err)
	}
	if _, err := rt2.Start(c, other.AgentID); err != nil {
		t.Fatal(err)
	}
	kubelet.exit(other.AgentID, 4)
	for _, ev := range eventsUntil(t, rt2, other.AgentID, 4) {
		if ev.AgentID == sp.AgentID && ev.State == runtime.StateExited {
			t.Errorf("event after Delete: %+v", ev)
		}
	}
}

// eventsUntil returns the events up to the agent's exit with code.
func eventsUntil(t *testing.T, rt runtime.Runtime, id string, code int) []runtime.Status {
	t.Helper()
	var seen []runtime.Status
	deadline := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-rt.Events():
			if !ok {
				t.Fatal("Events closed")
			}
			seen = append(seen, ev.Status)
			if st := ev.Status; st.AgentID == id && st.State == runtime.StateExited && st.ExitCode != nil && *st.ExitCode == code {
				return seen
			}
		case <-deadline:
			t.Fatalf("no exit %d event for %s; saw %+v", code, id, seen)
		}
	}
}

// fakeKubelet writes pod status as a kubelet would.
type fakeKubelet struct {
	t *testing.T
	n ns
}

func (k fakeKubelet) pod(agentID string) *corev1.Pod {
	k.t.Helper()
	list, err := k.n.c.Client.CoreV1().Pods(k.n.name).List(ctx(k.t), metav1.ListOptions{LabelSelector: runtime.LabelAgentID + "=" + agentID})
	if err != nil {
		k.t.Fatal(err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	return &list.Items[0]
}

func (k fakeKubelet) setStatus(agentID string, phase corev1.PodPhase, state corev1.ContainerState) {
	k.t.Helper()
	pod := k.pod(agentID)
	now := metav1.Now()
	pod.Status.Phase = phase
	pod.Status.StartTime = &now
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: pod.Spec.Containers[0].Image, State: state,
		Ready: state.Running != nil, Started: ptr(state.Running != nil)}}
	if _, err := k.n.c.Client.CoreV1().Pods(k.n.name).UpdateStatus(ctx(k.t), pod, metav1.UpdateOptions{}); err != nil {
		k.t.Fatalf("update pod status: %v", err)
	}
}

func (k fakeKubelet) run(agentID string) {
	k.setStatus(agentID, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
}

func (k fakeKubelet) exit(agentID string, code int32) {
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	k.setStatus(agentID, phase, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: "Error", StartedAt: metav1.Now(), FinishedAt: metav1.Now()}})
}

var _ = k8srt.DefaultNamespace
