package broker_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/runtime/fake"
)

// TestAgentHubWarning: a Kubernetes broker warns when the Hub address its
// agents get is loopback or unspecified (a pod cannot reach it), naming
// the setting that changes it; a reachable address, or a runtime whose
// agents share the host's network or have it forwarded, gets none.
func TestAgentHubWarning(t *testing.T) {
	for _, c := range []struct {
		runtime, endpoint string
		warn              bool
	}{
		{"kubernetes", "http://127.0.0.1:8080", true},
		{"kubernetes", "http://127.5.6.7:8080", true},
		{"kubernetes", "http://[::1]:8080", true},
		{"kubernetes", "http://localhost:8080", true},
		{"kubernetes", "https://LOCALHOST", true},
		{"kubernetes", "http://hub.localhost:8080", true},
		{"kubernetes", "http://0.0.0.0:8080", true},
		{"kubernetes", "http://[::]:8080", true},
		{"kubernetes", "https://hub.example.com", false},
		{"kubernetes", "http://10.0.0.5:8080", false},
		{"kubernetes", "ftp://hub.example.com", true},
		{"kubernetes", "hub.example.com:8080", true},
		{"docker", "http://127.0.0.1:8080", false},  // forwarded from the agent network
		{"process", "http://127.0.0.1:8080", false}, // same host
		{"fake", "http://localhost:1", false},
	} {
		w := broker.AgentHubWarning(c.runtime, c.endpoint)
		if (w != "") != c.warn {
			t.Errorf("AgentHubWarning(%s, %s) = %q, want a warning: %v", c.runtime, c.endpoint, w, c.warn)
		}
		if w != "" && !strings.Contains(w, "server.broker.agent_hub_endpoint") {
			t.Errorf("AgentHubWarning(%s, %s) = %q does not name the setting", c.runtime, c.endpoint, w)
		}
	}
}

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
