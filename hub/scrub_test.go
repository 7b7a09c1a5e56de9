package hub

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// addrLike finds what looks like host:port or a socket path.
var addrLike = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+|\[[0-9a-f:]+\]:\d+|localhost:\d+|\.sock`)

func TestScrubAddresses(t *testing.T) {
	tests := []struct{ in, want string }{
		{"control channel closed: read tcp 127.0.0.1:8080->127.0.0.1:51234: read: connection reset by peer",
			"control channel closed: read tcp <address>-><address>: read: connection reset by peer"},
		{"dial tcp [::1]:9443: connect: connection refused", "dial tcp <address>: connect: connection refused"},
		{"dial tcp localhost:9443: connect: connection refused", "dial tcp <address>: connect: connection refused"},
		{"Get \"https://hub.internal.example:8443/api\": EOF", "Get \"https://<address>/api\": EOF"},
		{"Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
			"Cannot connect to the Docker daemon at <address> Is the docker daemon running?"},
		{"dial unix /run/scion/broker.sock: connect: no such file", "dial unix <address>: connect: no such file"},
		// Left alone: no address in them.
		{"runtime broker \"b1\" is offline; try again", "runtime broker \"b1\" is offline; try again"},
		{"stopped at 10:40 after 3:1 retries", "stopped at 10:40 after 3:1 retries"},
		{"agent exited with code 2: unknown flag", "agent exited with code 2: unknown flag"},
	}
	for _, tt := range tests {
		if got := scrubAddresses(tt.in); got != tt.want {
			t.Errorf("scrubAddresses(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestTransportErrorsNameNoAddress: the error a real dial gives names
// host:port; scrubbed, it names none.
func TestTransportErrorsNameNoAddress(t *testing.T) {
	_, dialErr := realDialError(t)
	for _, msg := range []string{dialErr.Error(), "control channel closed: " + dialErr.Error()} {
		if got := scrubAddresses(msg); addrLike.MatchString(got) {
			t.Errorf("scrubbed %q still names an address: %q", msg, got)
		}
	}
}

// TestBrokerStatusMessagesNameNoAddress: the runtime's account a broker
// reports with an agent's state (a pod's image pull back-off, the last
// output lines) becomes its status message with internal addresses
// scrubbed, as a dispatch error's does.
func TestBrokerStatusMessagesNameNoAddress(t *testing.T) {
	const leak = "Back-off pulling image registry.internal.example:5000/team/x: dial tcp 10.1.2.3:5000: i/o timeout"
	code := 1
	a := &store.Agent{Phase: api.PhaseRunning, ContainerStatus: api.ContainerRunning}
	applyContainerState(a, wire.AgentStatus{State: api.ContainerExited, ExitCode: &code, Message: leak})
	if a.Phase != api.PhaseError || !strings.Contains(a.StatusMessage, "Back-off pulling image") || addrLike.MatchString(a.StatusMessage) ||
		strings.Contains(a.StatusMessage, "registry.internal.example:5000") {
		t.Errorf("an exit report's message became %q (phase %s), want the runtime's words with no address", a.StatusMessage, a.Phase)
	}

	// The Hub records a broker's answer here outside any request: as the
	// system, as its own work does (hub/authstore).
	ctx := authstore.AsSystem(context.Background())
	s, st := newInternalServer(t)
	projectID, err := s.EnsureProject(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	ag := &store.Agent{Slug: "pull", ProjectID: projectID, Harness: "generic", Phase: api.PhaseProvisioning, Generation: 1, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateAgent(ctx, ag, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.afterDispatch(ctx, ag.ID, wire.AgentStatus{State: api.ContainerCreated, Message: leak, ObservedAt: now.UnixNano()}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.StatusMessage, "Back-off pulling image") || addrLike.MatchString(got.StatusMessage) ||
		strings.Contains(got.StatusMessage, "registry.internal.example:5000") {
		t.Errorf("a dispatch answer's message became %q, want the runtime's words with no address", got.StatusMessage)
	}
}
