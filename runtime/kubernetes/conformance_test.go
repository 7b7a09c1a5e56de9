package kubernetes_test

import (
	"testing"

	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
	"github.com/scion-go/scion/runtime/runtimetest"
)

// TestConformance runs the runtime conformance suite against the real API
// server, as the runtime's restricted identity, with the agents' own
// claims (no NFS share). A kubelet that runs no process reports the pods
// running (the runtime answers Start with pending until a kubelet does),
// so the suite checks what the API server answers (states, labels,
// idempotent Start and Stop, not-found, inventory, twenty agents at
// once, Close) and skips what needs the agent's output, exit or a
// process: logs of a running agent, exit events (see
// TestStatusFromWatches for those, from pod status), stop grace, exec,
// attach and re-adoption of a running agent
// (TestConformanceWithLocalKubelet runs those).
func TestConformance(t *testing.T) {
	n := newNS(t)
	startStatusKubelet(t, n)
	cfg := n.brokerIdentity(t, "scion-broker")
	const broker = "broker-rtt"
	runtimetest.Run(t, func(t *testing.T) runtime.Runtime {
		return n.runtimeAs(t, cfg, broker, nil)
	}, runtimetest.Options{
		BrokerID: broker,
		Command: func(marker string, ignoreTerm bool) []string {
			return []string{"/usr/local/bin/testagent", "serve", marker}
		},
		Finish: func(t *testing.T, _ runtime.Runtime, _ runtime.Spec, _ int) {
			t.Fatal("Finish needs a kubelet to run the agent")
		},
		NoProcess: "the kubelet of this test runs no process (" + k8srt.DefaultNamespace + " fixture)",
	})
}
