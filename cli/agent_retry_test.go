package cli

import (
	"testing"

	"github.com/scion-go/scion/api"
)

// TestRetryRefusedCreate: only an agent whose create left no container
// is created again by a start; one whose container existed (stopped,
// exited, or in error after it ran) is started as it is.
func TestRetryRefusedCreate(t *testing.T) {
	for _, c := range []struct {
		phase, container string
		want             bool
	}{
		{api.PhaseError, "", true},
		{api.PhaseError, api.ContainerMissing, true},
		{api.PhaseError, "exited", false},
		{api.PhaseStopped, "", false},
		{api.PhaseRunning, "running", false},
		{api.PhaseProvisioning, "", false},
	} {
		if got := retryRefusedCreate(api.Agent{Phase: c.phase, ContainerStatus: c.container}); got != c.want {
			t.Errorf("phase %s container %q: retry %v, want %v", c.phase, c.container, got, c.want)
		}
	}
}

// TestRetryRequest: the retry keeps what the user typed, and takes the
// failed create's broker (and with it its profile) only where the
// request names none.
func TestRetryRequest(t *testing.T) {
	failed := api.Agent{BrokerID: "b1", Profile: "k8s"}
	for _, c := range []struct {
		name                    string
		req                     api.CreateAgentRequest
		wantBroker, wantProfile string
	}{
		{"nothing named", api.CreateAgentRequest{}, "b1", "k8s"},
		{"own profile", api.CreateAgentRequest{Profile: "docker"}, "b1", "docker"},
		{"other broker", api.CreateAgentRequest{Broker: "b2"}, "b2", ""},
	} {
		got := retryRequest(c.req, failed)
		if got.Broker != c.wantBroker || got.Profile != c.wantProfile {
			t.Errorf("%s: broker %q profile %q, want %q %q", c.name, got.Broker, got.Profile, c.wantBroker, c.wantProfile)
		}
	}
}
