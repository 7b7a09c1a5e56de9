// The plan of POST /agents: what a create decides, as a pure function of
// what its load read (see plan.go).

package plan

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

// CreateInput is everything a create decides on.
type CreateInput struct {
	Caller  authz.Caller
	Project *store.Project
	// Req is the request as CreateRequest left it (defaults filled in,
	// validated).
	Req      api.CreateAgentRequest
	Settings api.HubSettings
	Limits   api.Limits
	// Parent is the creating agent's record when the caller is an agent
	// (ParentErr: reading it failed).
	Parent    *store.Agent
	ParentErr error
	// SecretsErr is the refusal of the secrets the request names (their
	// authz decision needs the store: agentSecrets decides it in the load).
	SecretsErr error
	// Brokers are the placement candidates the load read.
	Brokers BrokerCandidates
	// Key is the record of the create's Idempotency-Key, if any, made at
	// Now (the caller's idempotency rules: who, which key, which request,
	// for how long).
	Key *store.IdempotencyRecord
	// AgentID and RunID are the new agent's IDs; Now is the time of the
	// create.
	AgentID, RunID string
	Now            time.Time
}

// BrokerCandidates are the brokers a create's load read, in the store's
// order, with which provide for the project and which have a session.
// The plan weighs those the caller can see.
type BrokerCandidates struct {
	List     []*store.Broker
	Provider map[string]bool
	Online   map[string]bool
}

// CreatePlan is a create decided.
type CreatePlan struct {
	// Agent is the record to insert, with the options written in the same
	// transaction (the slot when it starts, the auto-link, the key).
	Agent *store.Agent
	Opts  store.CreateAgentOptions
	// Broker is where it runs; Limit the broker's running-agent cap.
	Project   *store.Project
	Broker    *store.Broker
	Limit     int
	Placement placement.Decision
	// Key is the broker's key of the create command.
	Key string
	// CheckRoom: the agent does not start (so takes no slot), but a full
	// broker refuses it all the same: the executor counts the broker's
	// slots and asks room (the one read that depends on the decision).
	CheckRoom bool
}

// CreateRequest fills in what Agent Defaults supply and validates the
// request. It runs before anything is read: a request refused on its face
// costs no query.
func CreateRequest(req api.CreateAgentRequest, settings api.HubSettings) (api.CreateAgentRequest, error) {
	req.Harness = cmp.Or(req.Harness, settings.AgentDefaults.DefaultHarness)
	req.Image = cmp.Or(req.Image, settings.AgentDefaults.DefaultImage)
	if err := validateCreate(&req); err != nil {
		return req, err
	}
	return req, nil
}

// Create decides a create, refusing in this order: the new agent's
// identity (role, scopes, passthrough), its secrets, the placement cascade,
// dispatch to the chosen broker and its passthrough, the profile (or, on
// a flat broker, the pin).
func Create(in CreateInput) (CreatePlan, error) {
	req, p := in.Req, in.Project
	id, err := planIdentity(in.Caller, req, in.Parent, in.ParentErr)
	if err != nil {
		return CreatePlan{}, err
	}
	if in.SecretsErr != nil {
		return CreatePlan{}, in.SecretsErr
	}
	pin := placementInputOf(in.Caller, p, in.Settings, req.Broker, in.Brokers)
	d, perr := placement.Select(pin)
	if perr != nil {
		return CreatePlan{}, perr
	}
	var b *store.Broker
	for _, x := range in.Brokers.List {
		if x.ID == d.BrokerID {
			b = x
			break
		}
	}
	if err := placementRefusal(in.Caller, pin, d, b, req.Passthrough); err != nil {
		return CreatePlan{}, err
	}
	profile, pinned, err := planProfileOrPin(req.Profile, p, b)
	if err != nil {
		return CreatePlan{}, err
	}
	limit := placement.EffectiveLimit(b.Settings.MaxAgents, in.Limits.MaxAgentsPerBroker)
	now := in.Now
	a := &store.Agent{ID: in.AgentID, Slug: req.Name, ProjectID: p.ID, BrokerID: b.ID,
		Profile: profile, Pin: pinned, Harness: req.Harness, Image: req.Image, Command: req.Command,
		Env: req.Env, Ports: req.Ports, Phase: api.PhaseProvisioning, RunID: in.RunID, Generation: 1, Role: id.role,
		CreatedBy: in.Caller.Principal(), Delegator: id.delegation.Delegator, DelegationChain: id.delegation.Chain,
		Scopes: id.scopes, Passthrough: req.Passthrough, ParentAgentID: id.parent, SecretNames: req.Secrets,
		Payload: req.Payload, CreatedAt: now, UpdatedAt: now}
	a.Generations = []api.Generation{{Number: 1, BrokerID: b.ID, RunID: a.RunID, StartedAt: now, Reason: "created"}}
	// Everything the create writes goes in one transaction, after every
	// check: the agent, the cascade's auto-link, the capacity slot (only
	// running agents hold one) and the Idempotency-Key's record. A create
	// refused at any step, the quota's included, writes nothing.
	plan := CreatePlan{Agent: a, Project: p, Broker: b, Limit: limit, Placement: d, Key: "create:" + a.RunID,
		Opts: store.CreateAgentOptions{LinkProvider: d.AutoLink}}
	if req.Start {
		plan.Opts.ReserveLimit = &limit
	} else {
		plan.CheckRoom = limit > 0
	}
	plan.Opts.Key = in.Key
	return plan, nil
}

// planProfileOrPin is what the chosen broker b makes of the new agent: on
// a regular broker its profile (the request's, else the project's active
// one, else b's default), which b must offer; on a flat broker, whichever
// cascade step chose it, no profile at all (a flat instance never uses
// profiles: a profile the request names is refused, the active and the
// default ones are not applied) and the pin to b and its target.
func planProfileOrPin(requested string, p *store.Project, b *store.Broker) (string, *api.PinnedRuntimeTarget, error) {
	if b.RuntimeTarget == nil {
		profile := resolveProfile(requested, p, b)
		return profile, nil, checkProfile(b, profile)
	}
	t := *b.RuntimeTarget
	if !t.Complete() {
		// Registration and hello refuse such a target; a record that
		// holds one anyway names no target an agent could be pinned to.
		return "", nil, api.Conflict(api.CodeTargetMismatch,
			"runtime broker %s no longer serves a single complete runtime target (its record holds %s); choose another broker",
			api.Quote(b.Name), api.Quote(t.String())).WithDetail("broker", b.Name)
	}
	if requested != "" {
		return "", nil, api.BadRequest("runtime broker %s is a flat instance serving %s and uses no profiles: create the agent without -p/--profile %s, or choose a broker that offers it",
			api.Quote(b.Name), t.String(), api.Quote(requested)).WithDetail("broker", b.Name).WithDetail("runtimeTarget", t)
	}
	return "", &api.PinnedRuntimeTarget{BrokerID: b.ID, RuntimeTarget: t}, nil
}

// Room refuses a create that takes no slot on a broker already holding
// n slots of its limit.
func (p CreatePlan) Room(n int) error {
	if n >= p.Limit {
		return QuotaError(p.Broker, p.Limit)
	}
	return nil
}

// InsertErr is the answer to a create whose transaction failed with err.
// store.ErrKeyInUse stays as it is: handleCreateAgent answers it by
// replaying the create that won the key's claim (another Hub's).
func (p CreatePlan) InsertErr(err error) error {
	switch {
	case errors.Is(err, store.ErrQuota):
		return QuotaError(p.Broker, p.Limit)
	case errors.Is(err, store.ErrKeyInUse):
		return err
	case errors.Is(err, store.ErrNotFound): // its slot's broker: deregistered since placement
		return api.NotFound(api.CodeBrokerNotFound, "runtime broker %q not found: it was deregistered while the agent was being created", p.Broker.Name)
	}
	return storeerr.Map(err, api.CodeAgentNotFound, fmt.Sprintf("an agent named %q in project %q", p.Agent.Slug, p.Project.Name))
}

// planIdentity decides the identity of the agent c asks to create: the
// role must be one c can delegate, the scopes ones c holds, and a
// passthrough identity only a signed-in user can lend. parent is the
// creating agent's record when c is an agent.
func planIdentity(c authz.Caller, req api.CreateAgentRequest, parent *store.Agent, parentErr error) (agentIdentity, error) {
	if !authz.ValidAgentRole(req.Role) {
		return agentIdentity{}, api.BadRequest("invalid role %q: use worker or coordinator", req.Role)
	}
	id := agentIdentity{role: cmp.Or(req.Role, authz.AgentRoleWorker)}
	if err := Refused(authz.AgentCreate, authz.CanDelegate(c, id.role)); err != nil {
		return id, err
	}
	var requested []string
	if req.Scopes != nil {
		requested = append([]string{}, *req.Scopes...)
	}
	scopes, ref := authz.AgentScopes(c, requested)
	if err := Refused(authz.AgentCreate, ref); err != nil {
		return id, err
	}
	id.scopes = scopes
	if req.Passthrough != "" {
		if req.Passthrough != "gcp" {
			return id, api.BadRequest("invalid passthrough %q: the passthrough identity kinds are: gcp", req.Passthrough)
		}
		if err := Refused(authz.AgentCreate, authz.CanUsePassthrough(c)); err != nil {
			return id, err
		}
	}
	var parentDelegator string
	var parentChain []string
	if c.Kind == authz.Agent {
		if parentErr != nil {
			return id, parentErr
		}
		parentDelegator, parentChain, id.parent = parent.Delegator, parent.DelegationChain, parent.ID
		id.holder = parent
	}
	id.delegation = authz.NewDelegation(c, parentDelegator, parentChain)
	return id, nil
}

// CandidateRes is broker b as the caller's authz sees it from the project.
func CandidateRes(b *store.Broker, provider bool) authz.BrokerRes {
	return authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide, ServesProject: provider}
}

// placementInputOf is the cascade's question: the brokers among bs the
// caller can see (the others are answered like unknown ones), each with
// whether the caller may dispatch to it.
func placementInputOf(c authz.Caller, p *store.Project, settings api.HubSettings, explicit string, bs BrokerCandidates) placement.Input {
	in := placement.Input{Project: p.Name, Explicit: explicit, ProjectDefault: p.DefaultBrokerID,
		HubDefault:       settings.AgentDefaults.DefaultRuntimeBroker,
		CanUpdateProject: authz.CanLink(c, *ProjectRes(p)) == nil}
	for _, b := range bs.List {
		res := CandidateRes(b, bs.Provider[b.ID])
		if !authz.Visible(c, res) {
			continue
		}
		in.Brokers = append(in.Brokers, placement.Broker{ID: b.ID, Name: b.Name, Online: bs.Online[b.ID],
			Provider: bs.Provider[b.ID], Dispatchable: authz.Dispatchable(c, res) == nil})
	}
	return in
}

// placementRefusal refuses a decided broker the caller may not dispatch
// to, or one that does not allow the agent's passthrough identity.
func placementRefusal(c authz.Caller, in placement.Input, d placement.Decision, b *store.Broker, passthrough string) error {
	for _, pb := range in.Brokers {
		if pb.ID == d.BrokerID && !pb.Dispatchable {
			return Refused(authz.BrokerDispatch, authz.Dispatchable(c, CandidateRes(b, pb.Provider)))
		}
	}
	return Refused(authz.BrokerDispatch, authz.PassthroughAllowed(passthrough, b.Capabilities))
}

// Replaceable reports whether c's create may take over the name of old,
// the agent that holds it: only one the broker holds nothing of
// (NoContainer), with no command in flight, and only for a caller who may
// delete it (replacing is deleting its record).
func Replaceable(c authz.Caller, p *store.Project, old *store.Agent, inFlight bool) bool {
	if !NoContainer(old) || inFlight {
		return false
	}
	return authz.Can(c, authz.AgentLifecycle, authz.Resource{Project: ProjectRes(p), Agent: AgentRes(old)}) == nil
}
