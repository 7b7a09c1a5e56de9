package authstore

import (
	"fmt"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// Subject is what a decision looks at: the records a store call names, as
// authorization sees them. Only the parts its method's rule reads are
// set.
type Subject struct {
	// Res is the project (with its owner), agent, broker or secret the
	// call reads or writes; a secret with a nil Project is hub-wide.
	Res authz.Resource
	// Named: a record the request was allowed to read names this broker
	// (an agent's or a Job's), so its record is readable too.
	Named bool
	// Setting is a setting's key.
	Setting string
	// User is the user a user or token record is, or belongs to.
	User string
	// Kind is a token's kind (store.TokenUser, ...) or a queued
	// dispatch's method (QueuedStop, ...).
	Kind string
	// KeyOwner is whose Idempotency-Key record it is (KeyOwner).
	KeyOwner string
}

// The settings a request may reach (hub.read, hub.admin); every other key
// (the agent-token signing key, ...) is the system's alone.
const (
	SettingHub    = "hub_settings"
	SettingLimits = "limits"
)

// The queued dispatches a request may make (the wire methods agent.stop
// and job.cancel; the Hub's tests hold these equal to package wire's).
// Every other one (a project's cleanup) is queued by the Hub alone.
const (
	QueuedStop      = "agent.stop"
	QueuedJobCancel = "job.cancel"
)

// effect is how a rule's refusal is answered.
type effect int

const (
	// reads: a read of records; any refusal is not found (the record
	// does not exist for the caller), a list leaves it out.
	reads effect = iota
	// sees: a read of a project's records, as reads, except that a
	// refusal the API answers 403 inside the caller's own project (a
	// token without the scope for it) lets the record through: the
	// handler's own check gives the 403, which a 404 would contradict.
	sees
	// writes: a change; a Hidden refusal is not found, any other
	// forbidden (403).
	writes
	// values: a secret's value, answered as the API answers naming a
	// secret: Hidden is not found, any other refusal forbidden. Not
	// found would read as "no such secret" and send the lookup on to a
	// hub-wide secret of the same name.
	values
	// open: no record, nothing to decide (a count, a ping).
	open
)

// rule is one row of the policy: how its refusals are answered, and who
// may (nil: the system alone).
type rule struct {
	effect effect
	allow  func(authz.Caller, Subject) *authz.Refusal
}

// rules is the policy table: every method of store.Store (and the facets
// a wrapper asks separately) and who may call it. TestEveryStoreMethodHasARule
// fails for a method without a row; a name without a row is refused.
var rules = map[string]rule{
	// Projects.
	"CreateProject":    {writes, can(authz.ProjectCreate)},
	"GetProject":       {sees, can(authz.ProjectRead)},
	"ListProjects":     {sees, can(authz.ProjectRead)},
	"UpdateProject":    {writes, can(authz.ProjectUpdate)},
	"DeleteProject":    {writes, can(authz.ProjectDelete)},
	"LinkProvider":     {writes, can(authz.ProjectUpdate)},
	"UnlinkProvider":   {writes, can(authz.ProjectUpdate)},
	"ProjectProviders": {sees, can(authz.ProjectRead)},
	"BrokerProjects":   {reads, brokerProject},

	// Brokers. SetBrokerStatus is the channel's (online, offline).
	"CreateBroker":        {writes, can(authz.BrokerRegister)},
	"GetBroker":           {reads, visible},
	"GetBrokerForProject": {reads, visible},
	"ListBrokers":         {reads, visible},
	"UpdateBroker":        {writes, can(authz.BrokerManage)},
	"UpdateBrokerWith":    {writes, can(authz.BrokerManage)},
	"SetBrokerStatus":     {writes, nil},
	"DeleteBroker":        {writes, can(authz.BrokerDeregister)},

	// Agents. A replace in CreateAgentWith is decided as DeleteAgent, its
	// key as CompleteIdempotencyRecord.
	"CreateAgent":     {writes, can(authz.AgentCreate)},
	"CreateAgentWith": {writes, can(authz.AgentCreate)},
	"GetAgent":        {sees, can(authz.AgentRead)},
	"GetAgentBySlug":  {sees, can(authz.AgentRead)},
	"ListAgents":      {sees, can(authz.AgentRead)},
	"UpdateAgent":     {writes, agentWrite},
	"UpdateAgentWith": {writes, agentWrite},
	"DeleteAgent":     {writes, agentWrite},
	"RenewAgentToken": {writes, renewal},

	// Capacity reservations follow the agent; counts name no record.
	"Reserve":           {writes, agentWrite},
	"Release":           {writes, agentWrite},
	"ReleaseOn":         {writes, agentWrite},
	"CountReservations": {open, anyone},
	"ReservationCounts": {open, anyone},
	"ReservedAgents":    {reads, nil},

	// Users and tokens. Authentication (the token lookups, the OIDC
	// sign-in's users) runs before there is a caller: the system's.
	"CreateUser":       {writes, nil},
	"GetUser":          {reads, ownUser},
	"GetUserBySubject": {reads, nil},
	"UpdateUser":       {writes, can(authz.UserManage)},
	"ListUsers":        {reads, ownUser},
	"CreateToken":      {writes, tokenCreate},
	"GetToken":         {reads, tokenOf},
	"GetTokenByHash":   {reads, nil},
	"GetTokenAndUser":  {reads, nil},
	"ListTokens":       {reads, tokenOf},
	"RevokeToken":      {writes, tokenOf},
	"CreateJoinToken":  {writes, can(authz.JoinTokenCreate)},
	"ConsumeJoinToken": {writes, nil},
	"JoinBroker":       {writes, nil},

	// Settings: the hub's settings and limits; other keys are internal.
	"GetSetting":        {reads, settingRead},
	"GetSettingVersion": {reads, settingRead},
	"PutSetting":        {writes, settingWrite},
	"PutSettingIf":      {writes, settingWrite},

	// The dispatch queue: a request queues a stop or a Job's cancel it
	// may make; delivering and pruning are the Hub's.
	"EnqueueDispatch":     {writes, enqueue},
	"PendingDispatches":   {reads, nil},
	"GetDispatch":         {reads, nil},
	"NoteDispatchAttempt": {writes, nil},
	"FinishDispatch":      {writes, nil},
	"PruneDispatches":     {writes, nil},

	// Idempotency-Key records: a caller's own.
	"GetIdempotencyRecord":      {reads, ownKey},
	"CompleteIdempotencyRecord": {writes, ownKey},
	"PruneIdempotencyRecords":   {writes, nil},

	// Broker nonces: authentication's.
	"UseNonce":    {writes, nil},
	"PruneNonces": {writes, nil},

	// Secrets: names for secret.read, changes for secret.write, a value
	// only as naming it in an agent create allows (secret.use).
	"PutSecret":    {writes, can(authz.SecretWrite)},
	"GetSecret":    {values, can(authz.SecretUse)},
	"ListSecrets":  {reads, can(authz.SecretRead)},
	"DeleteSecret": {writes, can(authz.SecretWrite)},

	// Delegated Jobs: agent.lifecycle on the Job's agent.
	"CreateJob":         {writes, can(authz.AgentLifecycle)},
	"GetJob":            {reads, can(authz.AgentLifecycle)},
	"ListJobs":          {reads, can(authz.AgentLifecycle)},
	"UpdateJobWith":     {writes, can(authz.AgentLifecycle)},
	"DeleteJob":         {writes, can(authz.AgentLifecycle)},
	"ExpirePendingJobs": {writes, nil},

	// Moves' records: the system's (hub/moves writes them from the
	// Hub's context once the request is authorized).
	"CreateMove":   {writes, nil},
	"UpdateMove":   {writes, nil},
	"GetMove":      {reads, nil},
	"ListMoves":    {reads, nil},
	"RunningMoves": {reads, nil},

	// Broker-scoped secrets: hub admins manage them; the value is the
	// broker's own (GetBrokerSecret); an admin reads the record without
	// it (GetBrokerSecret.metadata).
	"PutBrokerSecret":          {writes, hubSecretWrite},
	"GetBrokerSecret":          {reads, ownBroker},
	"GetBrokerSecret.metadata": {reads, hubSecretWrite},
	"ListBrokerSecrets":        {reads, hubSecretWrite},
	"DeleteBrokerSecret":       {writes, hubSecretWrite},

	// No record: the readiness probe runs with no caller at all.
	"Ping":  {open, anyone},
	"Close": {open, anyone},
}

// Decide is the policy: may caller c make store call m on the records s
// names? nil allows; a Hidden refusal is answered as not found (for c
// the record does not exist); any other is forbidden. A method without a
// row is refused: default deny. The system is no caller: the wrapper
// lets its calls through before it asks.
func Decide(m string, c authz.Caller, s Subject) *authz.Refusal {
	r, ok := rules[m]
	if !ok {
		return &authz.Refusal{Reason: "no authorization rule for store method " + m}
	}
	if r.allow == nil {
		if r.effect == writes {
			return &authz.Refusal{Reason: fmt.Sprintf("only the Hub itself may %s", m)}
		}
		return hidden("only the Hub itself reads this")
	}
	ref := r.allow(c, s)
	if ref == nil {
		return nil
	}
	switch r.effect {
	case reads:
		return hide(ref)
	case sees:
		if !ref.Hidden && c.ProjectID != "" && c.ProjectID == projectOf(s.Res) {
			return nil
		}
		return hide(ref)
	}
	return ref
}

// Allowed reports whether Decide allows.
func Allowed(m string, c authz.Caller, s Subject) bool { return Decide(m, c, s) == nil }

func hidden(reason string) *authz.Refusal { return &authz.Refusal{Hidden: true, Reason: reason} }

func hide(r *authz.Refusal) *authz.Refusal {
	if r.Hidden {
		return r
	}
	return hidden(r.Reason)
}

func projectOf(r authz.Resource) string {
	switch {
	case r.Project != nil:
		return r.Project.ID
	case r.Agent != nil:
		return r.Agent.ProjectID
	}
	return ""
}

// The rules. Each is a function of the caller and the records only.

func can(a authz.Action) func(authz.Caller, Subject) *authz.Refusal {
	return func(c authz.Caller, s Subject) *authz.Refusal { return authz.Can(c, a, s.Res) }
}

func anyone(authz.Caller, Subject) *authz.Refusal { return nil }

// visible: a broker the caller may know exists (authz.Visible), or one a
// record it may read names.
func visible(c authz.Caller, s Subject) *authz.Refusal {
	if s.Res.Broker != nil && (s.Named || authz.Visible(c, *s.Res.Broker)) {
		return nil
	}
	return hidden("runtime broker not visible to the caller")
}

// brokerProject: which projects a broker serves is broker.read's (and
// the broker's own); a caller confined to one project learns only
// whether the broker serves that one.
func brokerProject(c authz.Caller, s Subject) *authz.Refusal {
	b := s.Res.Broker
	switch {
	case b == nil || s.Res.Project == nil:
		return hidden("no broker")
	case c.Kind == authz.Broker && b.ID == c.ID:
		return nil
	case authz.Can(c, authz.BrokerRead, authz.Resource{Broker: b}) == nil:
		return nil
	case c.ProjectID != "" && s.Res.Project.ID == c.ProjectID:
		return nil
	}
	return hidden("another project's link")
}

// agentWrite: agent.lifecycle on the agent; or the agent's creator that
// may still create agents in its project, for what its create writes
// after the commit (the phase its broker reported, the slot), also in a
// keyed retry of the create: a token with only the agent-create scope
// makes agents it cannot act on afterwards.
func agentWrite(c authz.Caller, s Subject) *authz.Refusal {
	ref := authz.Can(c, authz.AgentLifecycle, s.Res)
	if ref == nil {
		return nil
	}
	if a := s.Res.Agent; a != nil && a.CreatedBy != "" && a.CreatedBy == c.Principal() &&
		authz.Can(c, authz.AgentCreate, authz.Resource{Project: s.Res.Project}) == nil {
		return nil
	}
	return ref
}

// renewal: an agent renews only its own token.
func renewal(c authz.Caller, s Subject) *authz.Refusal {
	if s.Res.Agent == nil || c.Kind != authz.Agent || s.Res.Agent.ID != c.ID {
		return hidden("another agent's token")
	}
	return authz.CanRefreshAgentToken(c)
}

// ownUser: a caller's own user record (a token's, its owner's), or any
// for user.manage.
func ownUser(c authz.Caller, s Subject) *authz.Refusal {
	if s.User != "" && s.User == c.UserID {
		return nil
	}
	return authz.Can(c, authz.UserManage, authz.Resource{})
}

// tokenOf: token.manage on one's own tokens; a hub admin reaches every
// user's (it may revoke any).
func tokenOf(c authz.Caller, s Subject) *authz.Refusal {
	if ref := authz.Can(c, authz.TokenManage, authz.Resource{}); ref != nil {
		return ref
	}
	if s.User == c.UserID || authz.Can(c, authz.HubAdmin, authz.Resource{}) == nil {
		return nil
	}
	return hidden("another user's token")
}

// tokenCreate: a user makes access tokens for itself, for a project it
// may read (token.manage); a hub admin makes scrape tokens. Sign-in
// tokens are minted by sign-in alone.
func tokenCreate(c authz.Caller, s Subject) *authz.Refusal {
	if s.User != c.UserID {
		return &authz.Refusal{Reason: "a token is made for its caller's own user"}
	}
	switch {
	case s.Kind == store.TokenMetrics:
		return authz.Can(c, authz.HubAdmin, authz.Resource{})
	case s.Kind == store.TokenUser && s.Res.Project != nil:
		if ref := authz.Can(c, authz.TokenManage, authz.Resource{}); ref != nil {
			return ref
		}
		if ref := authz.Can(c, authz.ProjectRead, authz.Resource{Project: s.Res.Project}); ref != nil {
			return hide(ref)
		}
		return nil
	}
	return &authz.Refusal{Reason: fmt.Sprintf("a %s token without a project is minted by sign-in alone", s.Kind)}
}

func publicSetting(key string) bool { return key == SettingHub || key == SettingLimits }

func settingRead(c authz.Caller, s Subject) *authz.Refusal {
	if !publicSetting(s.Setting) {
		return hidden("an internal setting")
	}
	return authz.Can(c, authz.HubRead, authz.Resource{})
}

func settingWrite(c authz.Caller, s Subject) *authz.Refusal {
	if !publicSetting(s.Setting) {
		return &authz.Refusal{Reason: "an internal setting: only the Hub writes it"}
	}
	return authz.Can(c, authz.HubAdmin, authz.Resource{})
}

// enqueue: a stop queued by one who may stop the agent, a Job's cancel by
// one who may act on its agent.
func enqueue(c authz.Caller, s Subject) *authz.Refusal {
	switch s.Kind {
	case QueuedStop:
		return agentWrite(c, s)
	case QueuedJobCancel:
		return authz.Can(c, authz.AgentLifecycle, s.Res)
	}
	return &authz.Refusal{Reason: fmt.Sprintf("only the Hub itself queues %s", s.Kind)}
}

func ownKey(c authz.Caller, s Subject) *authz.Refusal {
	if s.KeyOwner != "" && s.KeyOwner == KeyOwner(c) {
		return nil
	}
	return hidden("another caller's key")
}

// hubSecretWrite: secret.write on hub-wide secrets (hub admins).
func hubSecretWrite(c authz.Caller, _ Subject) *authz.Refusal {
	return authz.Can(c, authz.SecretWrite, authz.Resource{})
}

func ownBroker(c authz.Caller, s Subject) *authz.Refusal {
	if c.Kind == authz.Broker && s.Res.Broker != nil && s.Res.Broker.ID == c.ID {
		return nil
	}
	return hidden("another runtime broker's secret")
}

// The list scopes: what of a list c may see, narrowing the query where
// the store can (so totals and cursors stay the store's).

// agentScope narrows an agent list's filter to what c may see; ok false:
// nothing. A caller confined to one project lists that project's agents.
func agentScope(c authz.Caller, f store.AgentFilter) (store.AgentFilter, bool) {
	if Allowed("ListAgents", c, Subject{}) {
		return f, true
	}
	if c.ProjectID == "" || (f.ProjectID != "" && f.ProjectID != c.ProjectID) {
		return f, false
	}
	if !Allowed("ListAgents", c, Subject{Res: authz.Resource{Project: &authz.Project{ID: c.ProjectID}}}) {
		return f, false
	}
	f.ProjectID = c.ProjectID
	return f, true
}

// projectScope is which projects c may list: all, one (only), or none.
func projectScope(c authz.Caller) (all bool, only string) {
	if Allowed("ListProjects", c, Subject{}) {
		return true, ""
	}
	if c.ProjectID != "" && Allowed("ListProjects", c, Subject{Res: authz.Resource{Project: &authz.Project{ID: c.ProjectID}}}) {
		return false, c.ProjectID
	}
	return false, ""
}

// everyBroker reports whether c may list every broker (broker.read);
// otherwise the list holds the ones Visible to it.
func everyBroker(c authz.Caller) bool {
	return Allowed("ListBrokers", c, Subject{Res: authz.Resource{Broker: &authz.BrokerRes{}}})
}
