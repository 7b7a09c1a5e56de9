package config_test

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/config"
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
		w := config.AgentHubWarning(c.runtime, c.endpoint)
		if (w != "") != c.warn {
			t.Errorf("AgentHubWarning(%s, %s) = %q, want a warning: %v", c.runtime, c.endpoint, w, c.warn)
		}
		if w != "" && !strings.Contains(w, "server.broker.agent_hub_endpoint") {
			t.Errorf("AgentHubWarning(%s, %s) = %q does not name the setting", c.runtime, c.endpoint, w)
		}
	}
}
