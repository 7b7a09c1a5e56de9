package hub

import (
	"errors"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// TestReadQueuedAnswer: a queued stop's answer is carried out, gone,
// unanswered (sent again with its key) or refused.
func TestReadQueuedAnswer(t *testing.T) {
	for _, c := range []struct {
		err  error
		want queuedAnswer
	}{
		{nil, queuedAnswered},
		{api.Errorf(api.CodeAgentNotFound, "gone"), queuedGone},
		{api.Errorf(api.CodeBrokerUnavailable, "cut"), queuedUnanswered},
		{api.Errorf(api.CodeBrokerTimeout, "late"), queuedUnanswered},
		{api.Errorf(api.CodeRuntimeError, "engine"), queuedRefused},
		{errors.New("plain"), queuedRefused},
	} {
		if got := readQueuedAnswer(c.err); got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
}

// TestQueuedReassigned: a queued dispatch is for the agent on its broker
// and (when it names one) its run.
func TestQueuedReassigned(t *testing.T) {
	d := &store.Dispatch{BrokerID: "b1", RunID: "r1"}
	for _, c := range []struct {
		broker, run string
		want        bool
	}{{"b1", "r1", false}, {"b2", "r1", true}, {"b1", "r2", true}} {
		if got := queuedReassigned(d, &store.Agent{BrokerID: c.broker, RunID: c.run}); got != c.want {
			t.Errorf("agent on %s run %s: %v", c.broker, c.run, got)
		}
	}
	if queuedReassigned(&store.Dispatch{BrokerID: "b1"}, &store.Agent{BrokerID: "b1", RunID: "r9"}) {
		t.Error("a dispatch naming no run is for any run of the agent")
	}
}
