package broker

import (
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// TestBusyAgentsEventIsReportedAfterTheCommand: an agent exits while a
// command holds it longer than an event may wait (a restart on a loaded
// host: its stop's exit event, then its start). The event is not
// forwarded as it is, stamped as if current: the Hub would take the
// running agent for stopped and give up its slot, which the restart's
// answer does not take back. Once the command is done, the agent's state
// then, read under its lock, is reported.
func TestBusyAgentsEventIsReportedAfterTheCommand(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	s := spec("a1")
	s.Start = true
	answer := hub.status(wire.MethodAgentCreate, s)

	unlock, err := b.locks.lock(t.Context(), "a1") // the restart begins
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Stop(t.Context(), "a1", time.Second); err != nil { // an exit event
		t.Fatal(err)
	}
	if _, err := rt.Start(t.Context(), "a1"); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-hub.statuses:
		t.Fatalf("while a command holds the agent the Hub was told %s (%+v)", st.State, st)
	case <-time.After(eventTimeout + time.Second):
	}
	unlocked := stamp()
	unlock() // the restart answers running
	st := recv(t, hub.statuses, "the agent's status after the command")
	if st.AgentID != "a1" || st.State != runtime.StateRunning || st.ObservedAt < unlocked || st.ObservedAt <= answer.ObservedAt {
		t.Fatalf("after the command the Hub was told %+v, want a1 running, stamped after the command (%d)", st, unlocked)
	}
	select {
	case st := <-hub.statuses:
		t.Fatalf("a second report %+v, want one", st)
	case <-time.After(200 * time.Millisecond):
	}
}
