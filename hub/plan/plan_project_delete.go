// The plan of one agent's removal in a forced project delete (DELETE
// /projects/{project}?force=true; multi-broker spec, "Inconsistent agent
// placement"): the project's agent records go with only best-effort
// runtime deletes, an operator's explicit, project-wide choice.

package plan

import (
	"fmt"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// ProjectAgentInput is what a forced project delete knows of one of the
// project's agents.
type ProjectAgentInput struct {
	Reach ReachInput
	// Online: the agent's broker has a session.
	Online bool
}

// projectAgentPlan is one agent's removal decided: the broker's delete
// first when Dispatch (best-effort: a failure leaves the workload, not
// the record), then the record.
type projectAgentPlan struct {
	Dispatch bool
	Key      string
	// Misplaced is Reach's refusal of a pinned agent whose placement
	// is inconsistent: nothing is sent to any broker, and the Hub logs an
	// error naming the agent and its pinned broker.
	Misplaced error
	// Left says why the agent's workload may be left running, for the
	// answer (empty: it had none, or its broker gets the delete).
	Left string
}

// ProjectAgentDelete decides one agent's removal in a forced project
// delete. Nothing is ever refused: the record goes in every case.
func ProjectAgentDelete(in ProjectAgentInput) projectAgentPlan {
	a := in.Reach.Agent
	if a.Pin != nil {
		if err := Reach(in.Reach); err != nil {
			return projectAgentPlan{Misplaced: err, Left: fmt.Sprintf(
				"its placement is inconsistent (%s): nothing was sent to any runtime broker; remove its workload on runtime broker %s by hand",
				api.AsError(err).Code, a.Pin.BrokerID)}
		}
	}
	switch {
	case a.BrokerID == "":
		return projectAgentPlan{} // never placed: no workload
	case in.Reach.BrokerMissing:
		return projectAgentPlan{Left: "its runtime broker is no longer registered: its workload, if any, may still run on that machine; remove it there by hand"}
	case !in.Online:
		return projectAgentPlan{Left: "its runtime broker is offline: its workload was not deleted; remove it on that broker by hand"}
	}
	return projectAgentPlan{Dispatch: true, Key: "delete:" + a.ID}
}

// ProjectAgentLeft is the answer's entry for an agent whose workload may
// be left on broker b (nil: not registered) for reason.
func ProjectAgentLeft(a *store.Agent, b *store.Broker, reason string) api.ProjectResource {
	r := api.ProjectResource{BrokerID: a.BrokerID, Resource: "agent " + a.Slug, Reason: reason}
	if a.Pin != nil && a.Pin.BrokerID != "" {
		r.BrokerID = a.Pin.BrokerID // where its workload is, as far as the Hub can tell
	}
	if b != nil && b.ID == r.BrokerID {
		r.Broker = b.Name
	}
	return r
}
