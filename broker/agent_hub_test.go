package broker_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/runtime/fake"
)

// kubeNamed is a runtime that reports the kubernetes kind.
type kubeNamed struct{ *fake.Runtime }

func (kubeNamed) Name() string { return "kubernetes" }

// TestKubernetesBrokerWarnsAtStart: a broker on the kubernetes runtime
// whose agents would get a loopback Hub logs the warning when it is made,
// and none once agent_hub_endpoint names a reachable address, which is
// then what agents get.
func TestKubernetesBrokerWarnsAtStart(t *testing.T) {
	for _, c := range []struct {
		agentHub, want string
		warn           bool
	}{
		{"", "http://127.0.0.1:8080", true},
		{"https://hub.cluster.example", "https://hub.cluster.example", false},
	} {
		var logs bytes.Buffer
		b, err := broker.New(broker.Config{BrokerID: "b1", Secret: []byte("s"), Runtime: kubeNamed{fake.New()}, DataDir: t.TempDir(),
			HubEndpoint: "http://127.0.0.1:8080", AgentHubEndpoint: c.agentHub, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.AgentHubEndpoint(); got != c.want {
			t.Errorf("agent_hub_endpoint %q: agents get %q, want %q", c.agentHub, got, c.want)
		}
		warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "server.broker.agent_hub_endpoint")
		if warned != c.warn {
			t.Errorf("agent_hub_endpoint %q: warned %v, want %v; logs:\n%s", c.agentHub, warned, c.warn, logs.String())
		}
	}
}
