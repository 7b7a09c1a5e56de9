package plan

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// TestPlanProjectAgentDelete: a forced project delete removes every
// agent record; it sends the broker's delete only to an online broker of
// an agent whose placement holds, and says what may be left otherwise.
func TestPlanProjectAgentDelete(t *testing.T) {
	docker, kube := tDocker, tKube
	noBroker := tAgentOn(api.PhaseCreated)
	noBroker.BrokerID = ""
	moved := tPinned(tDocker)
	moved.BrokerID = "b2"
	for _, tc := range []struct {
		name      string
		in        ProjectAgentInput
		dispatch  bool
		misplaced string // Reach's code
		left      string // in the reason
	}{
		{"online", ProjectAgentInput{Reach: ReachInput{Agent: tAgentOn(api.PhaseRunning), Broker: tBroker("b1")}, Online: true}, true, "", ""},
		{"never placed", ProjectAgentInput{Reach: ReachInput{Agent: noBroker}}, false, "", ""},
		{"offline", ProjectAgentInput{Reach: ReachInput{Agent: tAgentOn(api.PhaseRunning), Broker: tBroker("b1")}}, false, "", "offline"},
		{"deregistered", ProjectAgentInput{Reach: ReachInput{Agent: tAgentOn(api.PhaseRunning), BrokerMissing: true}}, false, "", "no longer registered"},
		{"pinned, consistent, online", ProjectAgentInput{Reach: ReachInput{Agent: tPinned(tDocker), Broker: tFlat("b1", &docker)}, Online: true}, true, "", ""},
		{"pinned, target changed, online", ProjectAgentInput{Reach: ReachInput{Agent: tPinned(tDocker), Broker: tFlat("b1", &kube)}, Online: true}, false, api.CodeTargetMismatch, "remove its workload on runtime broker b1 by hand"},
		{"pinned, assigned elsewhere, online", ProjectAgentInput{Reach: ReachInput{Agent: moved, Broker: tFlat("b2", &docker)}, Online: true}, false, api.CodeTargetPinStale, "runtime broker b1"},
		{"pinned broker deregistered", ProjectAgentInput{Reach: ReachInput{Agent: tPinned(tDocker), BrokerMissing: true, PinnedMissing: true}}, false, api.CodeBrokerMissing, "nothing was sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ProjectAgentDelete(tc.in)
			if p.Dispatch != tc.dispatch || (p.Dispatch && p.Key != "delete:a1") {
				t.Errorf("dispatch %v key %q, want %v", p.Dispatch, p.Key, tc.dispatch)
			}
			if got := api.AsError(p.Misplaced); (got == nil) != (tc.misplaced == "") || (got != nil && got.Code != tc.misplaced) {
				t.Errorf("misplaced %v, want %q", p.Misplaced, tc.misplaced)
			}
			if (p.Left == "") != (tc.left == "") || !strings.Contains(p.Left, tc.left) {
				t.Errorf("left %q, want %q", p.Left, tc.left)
			}
		})
	}
	// The answer's entry names where the workload is: the pinned broker.
	l := ProjectAgentLeft(moved, tFlat("b2", &docker), "x")
	if l.BrokerID != "b1" || l.Broker != "" || l.Resource != "agent a" {
		t.Errorf("entry %+v: want the pinned broker b1, agent a", l)
	}
	if l := ProjectAgentLeft(tAgentOn(api.PhaseRunning), &store.Broker{ID: "b1", Name: "one"}, "x"); l.Broker != "one" || l.BrokerID != "b1" {
		t.Errorf("entry %+v", l)
	}
}
