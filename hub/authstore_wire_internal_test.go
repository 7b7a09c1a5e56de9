package hub

import (
	"testing"

	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/wire"
)

// TestAuthstoreNamesTheWireMethods: the queued dispatches hub/authstore
// lets a request make are the wire's stop and Job cancel (authstore may
// not import wire, so it names them itself).
func TestAuthstoreNamesTheWireMethods(t *testing.T) {
	if authstore.QueuedStop != wire.MethodAgentStop || authstore.QueuedJobCancel != wire.MethodJobCancel {
		t.Fatalf("authstore queues %q and %q, the wire's are %q and %q",
			authstore.QueuedStop, authstore.QueuedJobCancel, wire.MethodAgentStop, wire.MethodJobCancel)
	}
}
