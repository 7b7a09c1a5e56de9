// What the plans decide with besides their inputs: the refusals they
// build, the profile rules, the classification of a dispatch error.

package plan

import (
	"errors"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/lifecycle"
	"github.com/scion-go/scion/store"
)

// NoContainer reports whether the Hub knows that the broker holds nothing
// of agent a: the broker refused its create (it undoes a failed one), or
// an inventory showed it missing, and nothing has run since. Such an agent
// is only a record of why it failed: a create with its name replaces it,
// and a start creates it again.
func NoContainer(a *store.Agent) bool { return lifecycle.NoContainer(a.Phase, a.ContainerStatus) }

// agentIdentity is who a new agent is and who answers for it.
type agentIdentity struct {
	role       string
	scopes     []string
	delegation authz.Delegation
	parent     string // the creating agent's ID
	// holder is the creating agent's record: the secrets it was given
	// are the only ones it may hand on (the Hub's heldBy).
	holder *store.Agent
}

// resolveProfile: -p first, then the project's active profile, then the
// selected broker's default profile. The creator's profile is never
// inherited.
func resolveProfile(req string, p *store.Project, b *store.Broker) string {
	if req != "" {
		return req
	}
	if p.ActiveProfile != "" {
		return p.ActiveProfile
	}
	for _, pr := range b.Profiles {
		if pr.Default {
			return pr.Name
		}
	}
	return ""
}

// checkProfile refuses a profile the broker does not offer. A broker that
// declares no profiles takes the name as a plain label.
func checkProfile(b *store.Broker, profile string) error {
	if profile == "" || len(b.Profiles) == 0 {
		return nil
	}
	names := make([]string, 0, len(b.Profiles))
	for _, pr := range b.Profiles {
		if pr.Name == profile {
			return nil
		}
		names = append(names, pr.Name)
	}
	return api.Conflict(api.CodeProfileNotAvailable, "runtime broker %q does not offer profile %q; it offers: %s (choose one with -p, or change the project's active profile)",
		b.Name, profile, strings.Join(names, ", ")).WithDetail("profiles", names)
}

// ReservationScopeError is the refusal of agent a's slot on its broker b
// while the agent holds one on another broker (store.ErrReservationScope):
// the store never moves a slot (multi-broker spec, "Capacity of flat
// Runtime Brokers"). That broker's reconciliation frees it, since the
// agent is not assigned there; so does deleting the agent.
func ReservationScopeError(a *store.Agent, b *store.Broker) error {
	return api.Errorf(api.CodeReservationScopeConflict,
		"agent %q holds its capacity slot on another runtime broker than its own (%q); reservations are never moved between brokers: "+
			"that broker frees the slot when it next reports its inventory (at the latest when it reconnects), or delete the agent",
		a.Slug, b.Name).WithDetail("agent", a.Slug).WithDetail("broker", b.Name)
}

func QuotaError(b *store.Broker, limit int) error {
	return api.Errorf(api.CodeQuotaExceeded,
		"runtime broker %q is at its limit of %d running agents; stop an agent there or choose another broker", b.Name, limit).
		WithDetail("broker", b.Name).WithDetail("limit", limit)
}

// validateCreate is the create's one check (api.CreateAgentRequest.Validate,
// the CLI's and the broker's too), after the defaults.
func validateCreate(req *api.CreateAgentRequest) error {
	req.WithDefaults()
	return req.Validate()
}

func ProjectRes(p *store.Project) *authz.Project {
	return &authz.Project{ID: p.ID, Owner: p.CreatedBy}
}

func AgentRes(a *store.Agent) *authz.AgentRes {
	return &authz.AgentRes{ID: a.ID, ProjectID: a.ProjectID, Role: a.Role, CreatedBy: a.CreatedBy,
		Delegator: a.Delegator, ParentAgentID: a.ParentAgentID, Passthrough: a.Passthrough}
}

// BrokerMissing answers for an agent whose broker was deregistered (with
// force): nothing can reach its workload, and Scion never moves it.
func BrokerMissing(a *store.Agent) error {
	return api.Conflict(api.CodeBrokerMissing,
		"agent %q's runtime broker is no longer registered, so nothing can reach it; delete the agent with --force to remove its record (its workload may still run on that machine)",
		a.Slug).WithDetail("brokerId", a.BrokerID)
}

// LostReply reports whether a call failed in a way that leaves open
// whether the broker acted: the channel went away under it (the broker
// went offline, or its session was replaced), or the broker gave up on it
// (its own cancellation).
func LostReply(err error) bool {
	return api.IsCode(err, api.CodeBrokerUnavailable) || WentOffline(err)
}

// OfflineLost is the error of a call cut off because its broker went
// offline: 503 runtime_broker_offline for the caller, like a call to a
// broker already offline, but unlike that one it may have been carried
// out, which LostReply still tells the Hub's own code.
type OfflineLost struct{ Err *api.Error }

func (e *OfflineLost) Error() string { return e.Err.Error() }

func (e *OfflineLost) Unwrap() error { return e.Err }

func WentOffline(err error) bool {
	var o *OfflineLost
	return errors.As(err, &o)
}

// AnswerLost reports whether a job.run failed without the broker's
// answer (offline, channel gone, deadline): the broker may have submitted
// the Job. Anything else is the broker's refusal.
func AnswerLost(err error) bool {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return true // a context error
	}
	return LostReply(err) || ae.Code == api.CodeBrokerTimeout || ae.Code == api.CodeBrokerOffline
}
