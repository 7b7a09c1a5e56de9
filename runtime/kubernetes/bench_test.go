package kubernetes_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/internal/testenv/kube"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// BenchmarkPodCreate compares an agent's Create+Start through the runtime
// (dry-run validation, record lookup, record, two claims, pod) with a bare
// client-go create of a comparable pod, against the real API server:
//
//	eval "$(.ci/kube-apiserver.sh)"
//	go test -run '^$' -bench PodCreate -benchtime 200x ./runtime/kubernetes/
//
// Each sub-benchmark works in a namespace of its own, so that earlier
// objects do not slow later lists.
func BenchmarkPodCreate(b *testing.B) {
	c := kube.Need(b)
	ctx := context.Background()
	// No client-side rate limit: the figures are the API server's cost,
	// not client-go's token bucket (the runtime's default, 100 requests a
	// second with bursts of 200, is what a long run would hit first).
	unlimited := rest.CopyConfig(c.Admin)
	unlimited.QPS = -1
	newNS := func(b *testing.B) string {
		ns := c.Namespace(b)
		if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, kube.SandboxServiceAccount(ns, k8srt.DefaultServiceAccount), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		return ns
	}
	for _, withDelete := range []bool{false, true} {
		name := "runtime-create-start"
		if withDelete {
			name += "-delete"
		}
		b.Run(name, func(b *testing.B) {
			ns := newNS(b)
			broker := fmt.Sprintf("broker-bench-%v", withDelete)
			rt, err := k8srt.New(k8srt.Options{BrokerID: broker, Config: unlimited, Defaults: k8srt.Settings{Namespace: ns, HomeStorage: "pvc"}})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			i := 0
			for b.Loop() {
				i++
				sp := spec(broker, fmt.Sprintf("bench-%d", i))
				if _, err := rt.Create(ctx, sp); err != nil {
					b.Fatal(err)
				}
				if _, err := rt.Start(ctx, sp.AgentID); err != nil {
					b.Fatal(err)
				}
				if withDelete {
					if err := rt.Delete(ctx, sp.AgentID); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("client-go-create", func(b *testing.B) {
		cl, err := kubernetes.NewForConfig(unlimited)
		if err != nil {
			b.Fatal(err)
		}
		pods := cl.CoreV1().Pods(newNS(b))
		no := false
		i := 0
		for b.Loop() {
			i++
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bare-%d", i), Labels: map[string]string{"scion.agent_id": "x"}},
				Spec: corev1.PodSpec{ServiceAccountName: k8srt.DefaultServiceAccount, AutomountServiceAccountToken: &no,
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "agent", Image: "scion/test-agent:latest", Command: []string{"/agent"}}}}}
			if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
