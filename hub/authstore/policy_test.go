package authstore

import (
	"reflect"
	"sort"
	"testing"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// The callers of the tables.
var (
	admin    = authz.Caller{Kind: authz.User, ID: "ad", UserID: "ad", Role: authz.RoleAdmin}
	member   = authz.Caller{Kind: authz.User, ID: "um", UserID: "um", Role: authz.RoleMember}
	stranger = authz.Caller{Kind: authz.User, ID: "uo", UserID: "uo", Role: authz.RoleMember}
	viewer   = authz.Caller{Kind: authz.User, ID: "uv", UserID: "uv", Role: authz.RoleViewer}
	roleless = authz.Caller{Kind: authz.User, ID: "un", UserID: "un"}
	// Tokens of the member, confined to p1.
	tokRead   = authz.Caller{Kind: authz.Token, ID: "t1", UserID: "um", Role: authz.RoleMember, ProjectID: "p1", Scopes: []string{authz.ScopeProjectRead}}
	tokAgents = authz.Caller{Kind: authz.Token, ID: "t2", UserID: "um", Role: authz.RoleMember, ProjectID: "p1", Scopes: []string{authz.ScopeAgentRead}}
	tokCreate = authz.Caller{Kind: authz.Token, ID: "t3", UserID: "um", Role: authz.RoleMember, ProjectID: "p1", Scopes: []string{authz.ScopeAgentCreate}}
	tokLife   = authz.Caller{Kind: authz.Token, ID: "t4", UserID: "um", Role: authz.RoleMember, ProjectID: "p1", Scopes: []string{authz.ScopeAgentLifecycle}}
	agentP1   = authz.Caller{Kind: authz.Agent, ID: "a1", ProjectID: "p1", Role: authz.AgentRoleWorker, Scopes: []string{authz.ScopeAgentCreate}}
	agentP2   = authz.Caller{Kind: authz.Agent, ID: "a2", ProjectID: "p2", Role: authz.AgentRoleCoordinator}
	brokerB1  = authz.Caller{Kind: authz.Broker, ID: "b1"}
)

// The records of the tables: p1 owned by the member, p2 by someone else.
var (
	p1      = &authz.Project{ID: "p1", Owner: "um"}
	p2      = &authz.Project{ID: "p2", Owner: "uo"}
	inP1    = Subject{Res: authz.Resource{Project: p1}}
	inP2    = Subject{Res: authz.Resource{Project: p2}}
	agentA9 = Subject{Res: authz.Resource{Project: p1, Agent: &authz.AgentRes{ID: "a9", ProjectID: "p1", CreatedBy: "user:um", Delegator: "user:um"}}}
	agentB9 = Subject{Res: authz.Resource{Project: p2, Agent: &authz.AgentRes{ID: "b9", ProjectID: "p2", CreatedBy: "user:uo", Delegator: "user:uo"}}}
	plain   = Subject{Res: authz.Resource{Broker: &authz.BrokerRes{ID: "bx", Owner: "uo"}}}
	auto    = Subject{Res: authz.Resource{Broker: &authz.BrokerRes{ID: "bx", AutoProvide: true}}}
	serving = Subject{Res: authz.Resource{Broker: &authz.BrokerRes{ID: "bx", ServesProject: true}}}
	named   = Subject{Res: authz.Resource{Broker: &authz.BrokerRes{ID: "bx"}}, Named: true}
	own     = Subject{Res: authz.Resource{Broker: &authz.BrokerRes{ID: "b1"}}}
)

// TestEveryStoreMethodHasARule: the policy has a row for every method of
// store.Store, so a method added to the store is refused to requests
// (default deny) and fails this test until it has one.
func TestEveryStoreMethodHasARule(t *testing.T) {
	typ := reflect.TypeFor[store.Store]()
	var missing []string
	for i := range typ.NumMethod() {
		if _, ok := rules[typ.Method(i).Name]; !ok {
			missing = append(missing, typ.Method(i).Name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("store methods without a rule: %v", missing)
	}
	if got := Decide("NoSuchMethod", admin, Subject{}); got == nil || got.Hidden {
		t.Fatalf("a method without a row: %v, want forbidden", got)
	}
}

// TestDecide is the policy table, method by method and caller by caller:
// "ok" allows, "404" is not found (the record does not exist for the
// caller), "403" forbidden.
func TestDecide(t *testing.T) {
	tests := []struct {
		method string
		s      Subject
		c      authz.Caller
		want   string
	}{
		// Reads of a project's records: a caller confined to p1 sees p1's
		// (a token without the scope too: the handler answers its 403)
		// and never p2's; a user without a Hub role sees nothing.
		{"GetProject", inP1, member, "ok"},
		{"GetProject", inP2, viewer, "ok"},
		{"GetProject", inP1, tokAgents, "ok"},
		{"GetProject", inP2, tokRead, "404"},
		{"GetProject", inP1, agentP1, "ok"},
		{"GetProject", inP1, agentP2, "404"},
		{"GetProject", inP1, roleless, "404"},
		{"GetProject", inP1, brokerB1, "404"},
		{"GetAgent", agentA9, viewer, "ok"},
		{"GetAgent", agentA9, tokRead, "ok"}, // its own project: the handler's 403
		{"GetAgent", agentB9, tokAgents, "404"},
		{"GetAgent", agentB9, agentP1, "404"},
		{"GetAgent", agentA9, brokerB1, "404"},
		{"ProjectProviders", inP2, agentP1, "404"},

		// Project writes: the owner or an admin; p2 is hidden from p1's.
		{"CreateProject", Subject{}, member, "ok"},
		{"CreateProject", Subject{}, viewer, "403"},
		{"CreateProject", Subject{}, tokRead, "403"},
		{"UpdateProject", inP1, member, "ok"},
		{"UpdateProject", inP1, stranger, "403"},
		{"UpdateProject", inP2, admin, "ok"},
		{"UpdateProject", inP2, tokLife, "404"},
		{"DeleteProject", inP1, tokLife, "403"},
		{"LinkProvider", inP1, agentP1, "403"},

		// Agent writes: agent.lifecycle, or its creator's create.
		{"UpdateAgent", agentA9, member, "ok"},
		{"UpdateAgent", agentA9, stranger, "403"},
		{"UpdateAgent", agentA9, viewer, "403"},
		{"UpdateAgent", agentA9, tokLife, "ok"},
		{"UpdateAgent", agentA9, tokCreate, "ok"}, // the member's agent, created by its create
		{"UpdateAgent", agentA9, tokAgents, "403"},
		{"UpdateAgent", agentB9, tokLife, "404"},
		{"UpdateAgent", agentB9, agentP2, "ok"}, // a coordinator of p2
		{"DeleteAgent", agentA9, agentP1, "403"},
		{"Release", agentB9, member, "403"},
		{"Reserve", agentA9, admin, "ok"},
		{"CreateAgentWith", inP1, tokCreate, "ok"},
		{"CreateAgentWith", inP1, tokAgents, "403"},
		{"CreateAgentWith", inP2, agentP1, "404"},
		{"CreateAgentWith", inP1, viewer, "403"},
		{"RenewAgentToken", Subject{Res: authz.Resource{Agent: &authz.AgentRes{ID: "a1"}}}, agentP1, "ok"},
		{"RenewAgentToken", Subject{Res: authz.Resource{Agent: &authz.AgentRes{ID: "a2"}}}, agentP1, "404"},
		{"RenewAgentToken", Subject{Res: authz.Resource{Agent: &authz.AgentRes{ID: "um"}}}, member, "404"},

		// Brokers: what authz.Visible shows, or what a read record names.
		{"GetBroker", plain, member, "ok"},
		{"GetBroker", plain, tokRead, "404"},
		{"GetBroker", auto, tokRead, "ok"},
		{"GetBroker", serving, agentP1, "ok"},
		{"GetBroker", named, agentP1, "ok"},
		{"GetBroker", plain, brokerB1, "404"},
		{"GetBroker", own, brokerB1, "ok"},
		{"UpdateBrokerWith", plain, member, "403"},
		{"UpdateBrokerWith", plain, stranger, "ok"}, // its owner
		{"DeleteBroker", own, brokerB1, "ok"},
		{"SetBrokerStatus", own, brokerB1, "403"},
		{"CreateBroker", plain, viewer, "403"},

		// Settings: hub settings and limits for hub.read / hub.admin; the
		// agent-token key and every other key are the system's, even for
		// an admin.
		{"GetSetting", Subject{Setting: SettingHub}, viewer, "ok"},
		{"GetSetting", Subject{Setting: SettingLimits}, tokRead, "404"},
		{"GetSettingVersion", Subject{Setting: SettingHub}, member, "ok"},
		{"GetSetting", Subject{Setting: "agent_token_key"}, admin, "404"},
		{"PutSetting", Subject{Setting: SettingLimits}, admin, "ok"},
		{"PutSettingIf", Subject{Setting: SettingHub}, member, "403"},
		{"PutSetting", Subject{Setting: "agent_token_key"}, admin, "403"},

		// Authentication's tables are the system's.
		{"GetTokenAndUser", Subject{}, admin, "404"},
		{"GetTokenByHash", Subject{}, admin, "404"},
		{"UseNonce", Subject{}, brokerB1, "403"},
		{"CreateUser", Subject{User: "x"}, admin, "403"},
		{"JoinBroker", Subject{}, admin, "403"},

		// Users and tokens: one's own; an admin's for all.
		{"GetUser", Subject{User: "um"}, tokRead, "ok"},
		{"GetUser", Subject{User: "uo"}, member, "404"},
		{"GetUser", Subject{User: "uo"}, admin, "ok"},
		{"UpdateUser", Subject{User: "uo"}, member, "403"},
		{"GetToken", Subject{User: "um"}, member, "ok"},
		{"GetToken", Subject{User: "um"}, stranger, "404"},
		{"GetToken", Subject{User: "um"}, admin, "ok"},
		{"GetToken", Subject{User: "um"}, tokRead, "404"},
		{"RevokeToken", Subject{User: "um"}, stranger, "404"},
		{"CreateToken", Subject{User: "um", Kind: store.TokenUser, Res: authz.Resource{Project: p1}}, member, "ok"},
		{"CreateToken", Subject{User: "um", Kind: store.TokenUser, Res: authz.Resource{Project: p1}}, viewer, "403"}, // for another user
		{"CreateToken", Subject{User: "um", Kind: store.TokenUser}, member, "403"},                                   // a sign-in token
		{"CreateToken", Subject{User: "um", Kind: store.TokenMetrics}, member, "403"},
		{"CreateToken", Subject{User: "ad", Kind: store.TokenMetrics}, admin, "ok"},
		{"CreateToken", Subject{User: "um", Kind: store.TokenUser, Res: authz.Resource{Project: p1}}, tokRead, "403"},
		{"CreateJoinToken", Subject{}, member, "403"},

		// Idempotency-Key records: the caller's own.
		{"GetIdempotencyRecord", Subject{KeyOwner: "user:um"}, member, "ok"},
		{"GetIdempotencyRecord", Subject{KeyOwner: "user:uo"}, admin, "404"},
		{"CompleteIdempotencyRecord", Subject{KeyOwner: "token:t1"}, tokRead, "ok"},
		{"CompleteIdempotencyRecord", Subject{KeyOwner: "user:um"}, tokRead, "404"},

		// The queue: a stop by one who may stop the agent, a Job's cancel
		// by one who may act on its agent; the rest is the Hub's.
		{"EnqueueDispatch", Subject{Res: agentA9.Res, Kind: QueuedStop}, member, "ok"},
		{"EnqueueDispatch", Subject{Res: agentA9.Res, Kind: QueuedStop}, viewer, "403"},
		{"EnqueueDispatch", Subject{Res: agentA9.Res, Kind: QueuedJobCancel}, tokLife, "ok"},
		{"EnqueueDispatch", Subject{Res: agentA9.Res, Kind: QueuedJobCancel}, tokCreate, "403"},
		{"EnqueueDispatch", Subject{Kind: "project.cleanup"}, admin, "403"},
		{"PendingDispatches", Subject{}, admin, "404"},
		{"FinishDispatch", Subject{}, admin, "403"},

		// Secrets: a value only as secret.use allows (an agent hands on
		// what it holds); names for secret.read; changes for secret.write.
		{"GetSecret", Subject{Res: authz.Resource{Project: p1, Secret: &authz.SecretRes{Name: "K"}}}, member, "ok"},
		{"GetSecret", Subject{Res: authz.Resource{Project: p2, Secret: &authz.SecretRes{Name: "K"}}}, member, "403"},
		{"GetSecret", Subject{Res: authz.Resource{Secret: &authz.SecretRes{Name: "K"}}}, member, "ok"}, // hub-wide
		{"GetSecret", Subject{Res: authz.Resource{Secret: &authz.SecretRes{Name: "K"}}}, viewer, "403"},
		{"GetSecret", Subject{Res: authz.Resource{Project: p1, Secret: &authz.SecretRes{Name: "K", Held: true}}}, agentP1, "ok"},
		{"GetSecret", Subject{Res: authz.Resource{Project: p1, Secret: &authz.SecretRes{Name: "K"}}}, agentP1, "403"},
		{"GetSecret", Subject{Res: authz.Resource{Project: p1, Secret: &authz.SecretRes{Name: "K"}}}, agentP2, "404"},
		{"GetSecret", Subject{Res: authz.Resource{Project: p1, Secret: &authz.SecretRes{Name: "K"}}}, tokRead, "403"},
		{"ListSecrets", inP1, viewer, "ok"},
		{"ListSecrets", inP1, agentP1, "404"},
		{"PutSecret", inP1, member, "ok"},
		{"PutSecret", Subject{}, member, "403"}, // hub-wide: admins
		{"DeleteSecret", inP2, tokLife, "404"},

		// Broker-scoped secrets: the broker's value, an admin's metadata.
		{"GetBrokerSecret", own, brokerB1, "ok"},
		{"GetBrokerSecret", plain, brokerB1, "404"},
		{"GetBrokerSecret", own, admin, "404"},
		{"GetBrokerSecret.metadata", own, admin, "ok"},
		{"GetBrokerSecret.metadata", own, member, "404"},
		{"PutBrokerSecret", own, member, "403"},

		// Jobs: agent.lifecycle on the Job's agent; any refusal of a read
		// is not found, even in the caller's own project.
		{"GetJob", agentA9, member, "ok"},
		{"GetJob", agentA9, viewer, "404"},
		{"GetJob", agentA9, tokAgents, "404"},
		{"GetJob", agentA9, tokLife, "ok"},
		{"GetJob", agentB9, member, "404"},
		{"UpdateJobWith", agentA9, tokAgents, "403"},
		{"CreateJob", agentA9, agentP1, "403"},
		{"ExpirePendingJobs", Subject{}, admin, "403"},

		// Counts name no record; the readiness probe has no caller.
		{"CountReservations", Subject{}, agentP2, "ok"},
		{"ReservedAgents", Subject{}, admin, "404"},
		{"Ping", Subject{}, authz.Caller{}, "ok"},
	}
	for _, tt := range tests {
		got := verdictName(Decide(tt.method, tt.c, tt.s))
		if got != tt.want {
			t.Errorf("%s by %s %s: %s, want %s (%v)", tt.method, tt.c.Kind, tt.c.ID, got, tt.want, Decide(tt.method, tt.c, tt.s))
		}
	}
}

func verdictName(r *authz.Refusal) string {
	switch {
	case r == nil:
		return "ok"
	case r.Hidden:
		return "404"
	}
	return "403"
}

// TestListScopes: a list is narrowed to what the caller may see, on the
// query (so the store's total and cursor are the caller's).
func TestListScopes(t *testing.T) {
	for _, tt := range []struct {
		c    authz.Caller
		f    store.AgentFilter
		want store.AgentFilter
		ok   bool
	}{
		{viewer, store.AgentFilter{}, store.AgentFilter{}, true},
		{member, store.AgentFilter{ProjectID: "p2"}, store.AgentFilter{ProjectID: "p2"}, true},
		{agentP1, store.AgentFilter{}, store.AgentFilter{ProjectID: "p1"}, true},
		{agentP1, store.AgentFilter{BrokerID: "b1"}, store.AgentFilter{ProjectID: "p1", BrokerID: "b1"}, true},
		{agentP1, store.AgentFilter{ProjectID: "p2"}, store.AgentFilter{}, false},
		{tokRead, store.AgentFilter{}, store.AgentFilter{ProjectID: "p1"}, true},
		{roleless, store.AgentFilter{}, store.AgentFilter{}, false},
		{brokerB1, store.AgentFilter{BrokerID: "b1"}, store.AgentFilter{}, false},
	} {
		got, ok := agentScope(tt.c, tt.f)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("agentScope(%s %s, %+v) = %+v, %v; want %+v, %v", tt.c.Kind, tt.c.ID, tt.f, got, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		c    authz.Caller
		all  bool
		only string
	}{
		{viewer, true, ""}, {admin, true, ""}, {tokRead, false, "p1"}, {agentP2, false, "p2"}, {roleless, false, ""}, {brokerB1, false, ""},
	} {
		if all, only := projectScope(tt.c); all != tt.all || only != tt.only {
			t.Errorf("projectScope(%s %s) = %v, %q; want %v, %q", tt.c.Kind, tt.c.ID, all, only, tt.all, tt.only)
		}
	}
	for c, want := range map[*authz.Caller]bool{&viewer: true, &member: true, &tokRead: false, &agentP1: false, &brokerB1: false, &roleless: false} {
		if got := everyBroker(*c); got != want {
			t.Errorf("everyBroker(%s %s) = %v, want %v", c.Kind, c.ID, got, want)
		}
	}
}
