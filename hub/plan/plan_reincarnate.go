package plan

import (
	"slices"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// A reincarnation in place (scion reincarnate without --broker): the
// agent's next generation on the broker it is on, with the Hub's preamble
// and a handoff; its home is rebuilt, its workspace kept, its session
// history not carried. It also records where the broker keeps the
// workspace, which a move needs.

// InPlaceInput is what ReincarnateInPlace decides on.
type InPlaceInput struct {
	Agent  *store.Agent
	Broker *store.Broker // the agent's broker; nil when it is gone
	Online bool
	// Moving: a move of the agent is running.
	Moving bool
	// Image and Role are the request's patch; Delegator is who becomes
	// the recorded delegator ("" keeps it).
	Image, Role, Delegator string
	RunID                  string // the new generation's
	Now                    time.Time
}

// ReincarnateInPlace is the agent's record for its next generation on its
// broker (phase provisioning, holding a slot once written), or why not.
func ReincarnateInPlace(in InPlaceInput) (*store.Agent, error) {
	a, slug := in.Agent, api.Quote(in.Agent.Slug)
	switch {
	case in.Moving:
		return nil, api.Conflict(api.CodeConflict, "agent %s is being moved; reincarnate it once the move has ended", slug)
	case a.BrokerID == "" || in.Broker == nil:
		return nil, api.Conflict(api.CodeBrokerMissing, "agent %s has no registered runtime broker to reincarnate it on", slug)
	case !in.Online:
		return nil, api.Errorf(api.CodeBrokerOffline, "runtime broker %s of agent %s is offline; try again when it reconnects",
			api.Quote(in.Broker.Name), slug).WithDetail("broker", in.Broker.Name)
	}
	next := *a
	next.RunID, next.Generation = in.RunID, a.Generation+1
	next.Generations = append(slices.Clone(a.Generations), api.Generation{Number: next.Generation, BrokerID: a.BrokerID,
		RunID: in.RunID, StartedAt: in.Now, Reason: "reincarnated"})
	if in.Image != "" {
		next.Image = in.Image
	}
	if in.Role != "" {
		next.Role = in.Role
	}
	if in.Delegator != "" {
		next.Delegator = in.Delegator
	}
	next.Phase, next.ContainerStatus, next.StatusMessage, next.PortMappings = api.PhaseProvisioning, "", "", nil
	next.UpdatedAt = in.Now
	return &next, nil
}
