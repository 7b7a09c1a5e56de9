package hub

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// addrLike finds what looks like host:port or a socket path.
var addrLike = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+|\[[0-9a-f:]+\]:\d+|localhost:\d+|\.sock`)

// TestTransportErrorsNameNoAddress: the error a real dial gives names
// host:port; scrubbed, it names none.
func TestTransportErrorsNameNoAddress(t *testing.T) {
	_, dialErr := realDialError(t)
	for _, msg := range []string{dialErr.Error(), "control channel closed: " + dialErr.Error()} {
		if got := httpapi.ScrubAddresses(msg); addrLike.MatchString(got) {
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
