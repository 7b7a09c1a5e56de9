package authz

import "testing"

var (
	admin    = Caller{Kind: User, ID: "ua", UserID: "ua", Role: RoleAdmin}
	member   = Caller{Kind: User, ID: "um", UserID: "um", Role: RoleMember}
	other    = Caller{Kind: User, ID: "uo", UserID: "uo", Role: RoleMember}
	viewer   = Caller{Kind: User, ID: "uv", UserID: "uv", Role: RoleViewer}
	noScope  = Caller{Kind: Token, ID: "t0", UserID: "um", Role: RoleMember, ProjectID: "p1"}
	tokRead  = Caller{Kind: Token, ID: "t1", UserID: "um", Role: RoleMember, ProjectID: "p1", Scopes: []string{ScopeProjectRead}}
	tokUpd   = Caller{Kind: Token, ID: "t2", UserID: "um", Role: RoleMember, ProjectID: "p1", Scopes: []string{ScopeProjectUpdate}}
	tokMake  = Caller{Kind: Token, ID: "t3", UserID: "um", Role: RoleMember, ProjectID: "p1", Scopes: []string{ScopeAgentCreate}}
	tokLife  = Caller{Kind: Token, ID: "t4", UserID: "um", Role: RoleMember, ProjectID: "p1", Scopes: []string{ScopeAgentLifecycle}}
	viewTok  = Caller{Kind: Token, ID: "t5", UserID: "uv", Role: RoleViewer, ProjectID: "p1", Scopes: []string{ScopeAgentCreate}}
	self     = Caller{Kind: Agent, ID: "a1", Role: AgentRoleWorker, ProjectID: "p1"}
	parent   = Caller{Kind: Agent, ID: "a0", Role: AgentRoleWorker, ProjectID: "p1", Scopes: []string{ScopeAgentCreate}}
	stranger = Caller{Kind: Agent, ID: "a9", Role: AgentRoleWorker, ProjectID: "p1"}
	coord    = Caller{Kind: Agent, ID: "ac", Role: AgentRoleCoordinator, ProjectID: "p1", Scopes: []string{ScopeAgentCreate}}
	outsider = Caller{Kind: Agent, ID: "ax", Role: AgentRoleCoordinator, ProjectID: "p2", Scopes: []string{ScopeAgentCreate}}
	brk      = Caller{Kind: Broker, ID: "b1"}

	p1     = &Project{ID: "p1", Owner: "um"}
	agent1 = &AgentRes{ID: "a1", ProjectID: "p1", CreatedBy: "agent:a0", ParentAgentID: "a0", Delegator: "user:um"}
	bOwned = &BrokerRes{ID: "b1", Owner: "um"}
)

func TestCan(t *testing.T) {
	onP1 := Resource{Project: p1}
	onAgent := Resource{Project: p1, Agent: agent1}
	onBroker := Resource{Broker: bOwned}
	hub := Resource{}
	tests := []struct {
		name   string
		c      Caller
		a      Action
		r      Resource
		ok     bool
		hidden bool
	}{
		{"anyone whoami", brk, Whoami, hub, true, false},
		{"admin changes hub", admin, HubAdmin, hub, true, false},
		{"member cannot change hub", member, HubAdmin, hub, false, false},
		{"viewer reads hub", viewer, HubRead, hub, true, false},
		{"viewer cannot create project", viewer, ProjectCreate, hub, false, false},
		{"member creates project", member, ProjectCreate, hub, true, false},
		{"owner updates project", member, ProjectUpdate, onP1, true, false},
		{"other member cannot update project", other, ProjectUpdate, onP1, false, false},
		{"other member reads project", other, ProjectRead, onP1, true, false},
		{"admin updates any project", admin, ProjectUpdate, onP1, true, false},
		{"viewer cannot update", viewer, ProjectUpdate, onP1, false, false},
		{"member writes own project secret", member, SecretWrite, onP1, true, false},
		{"member cannot write hub secret", member, SecretWrite, hub, false, false},
		{"delegator member acts on agent", member, AgentLifecycle, onAgent, true, false},
		{"other member cannot act on agent", other, AgentLifecycle, Resource{Agent: agent1}, false, false},
		{"viewer cannot act on agent", viewer, AgentLifecycle, onAgent, false, false},
		{"viewer reads agents", viewer, AgentRead, onAgent, true, false},
		{"member dispatches", member, BrokerDispatch, onBroker, true, false},
		{"viewer cannot dispatch", viewer, BrokerDispatch, onBroker, false, false},
		{"owner manages broker", member, BrokerManage, onBroker, true, false},
		{"other cannot manage broker", other, BrokerManage, onBroker, false, false},
		{"member cannot make join tokens", member, JoinTokenCreate, hub, false, false},
		{"member manages own tokens", member, TokenManage, hub, true, false},

		{"token without scopes cannot read", noScope, ProjectRead, onP1, false, false},
		{"read token reads project", tokRead, ProjectRead, onP1, true, false},
		{"read token cannot create agent", tokRead, AgentCreate, onP1, false, false},
		{"create token creates agent", tokMake, AgentCreate, onP1, true, false},
		{"create token reads agents", tokMake, AgentRead, onAgent, true, false},
		{"create token cannot stop agent", tokMake, AgentLifecycle, onAgent, false, false},
		{"lifecycle token acts on owner's agent", tokLife, AgentLifecycle, onAgent, true, false},
		{"update token updates project", tokUpd, ProjectUpdate, onP1, true, false},
		{"token never exceeds its owner", viewTok, AgentCreate, onP1, false, false},
		{"token outside its project is hidden", tokMake, AgentCreate, Resource{Project: &Project{ID: "p2"}}, false, true},
		{"token cannot read brokers", tokUpd, BrokerRead, onBroker, false, false},
		{"token cannot dispatch", tokUpd, BrokerDispatch, onBroker, false, false},
		{"token cannot create projects", tokUpd, ProjectCreate, hub, false, false},
		{"token cannot mint tokens", tokUpd, TokenManage, hub, false, false},

		{"agent acts on itself", self, AgentLifecycle, onAgent, true, false},
		{"agent reads its project", self, ProjectRead, onP1, true, false},
		{"agent never updates projects", coord, ProjectUpdate, onP1, false, false},
		{"agent without scope cannot create", self, AgentCreate, onP1, false, false},
		{"agent with scope creates", parent, AgentCreate, onP1, true, false},
		{"parent acts on its child", parent, AgentLifecycle, onAgent, true, false},
		{"unrelated worker cannot act on agent", stranger, AgentLifecycle, onAgent, false, false},
		{"coordinator acts on any agent of its project", coord, AgentLifecycle, onAgent, true, false},
		{"agent of another project sees nothing", outsider, AgentRead, onAgent, false, true},
		{"agent cannot read brokers", self, BrokerRead, onBroker, false, false},
		{"agent cannot touch secrets", coord, SecretRead, onP1, false, false},

		{"broker reads itself", brk, BrokerRead, onBroker, true, false},
		{"broker reads nothing else", brk, ProjectRead, onP1, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Can(tt.c, tt.a, tt.r)
			if (got == nil) != tt.ok {
				t.Fatalf("Can(%s %s, %s) = %v, want ok=%v", tt.c.Kind, tt.c.ID, tt.a, got, tt.ok)
			}
			if got != nil && got.Hidden != tt.hidden {
				t.Fatalf("hidden = %v, want %v (%s)", got.Hidden, tt.hidden, got.Reason)
			}
		})
	}
}

func TestVisibleAndDispatchable(t *testing.T) {
	plain := BrokerRes{ID: "b"}
	auto := BrokerRes{ID: "b", AutoProvide: true}
	serves := BrokerRes{ID: "b", ServesProject: true}
	autoServes := BrokerRes{ID: "b", AutoProvide: true, ServesProject: true}
	tests := []struct {
		name     string
		c        Caller
		b        BrokerRes
		visible  bool
		dispatch bool
	}{
		{"viewer sees every broker, dispatches to AutoProvide only", viewer, plain, true, false},
		{"viewer dispatches to AutoProvide", viewer, auto, true, true},
		{"member sees and dispatches", member, plain, true, true},
		{"token sees no foreign broker", tokUpd, plain, false, false},
		{"token sees a serving broker but cannot dispatch to it", tokUpd, serves, true, false},
		{"token dispatches to AutoProvide", tokUpd, auto, true, true},
		{"agent sees a serving broker", self, serves, true, false},
		{"agent without scope needs AutoProvide too", self, autoServes, true, true},
		{"agent with scope uses any serving broker", parent, serves, true, true},
		{"agent never uses a broker outside its project", parent, auto, true, false},
		{"agent sees nothing else", parent, plain, false, false},
		{"broker sees itself only", brk, BrokerRes{ID: "b1"}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Visible(tt.c, tt.b); got != tt.visible {
				t.Errorf("Visible = %v, want %v", got, tt.visible)
			}
			if got := Dispatchable(tt.c, tt.b); (got == nil) != tt.dispatch {
				t.Errorf("Dispatchable = %v, want ok=%v", got, tt.dispatch)
			}
		})
	}
}

func TestDelegation(t *testing.T) {
	tests := []struct {
		name string
		c    Caller
		role string
		ok   bool
	}{
		{"anyone delegates worker", tokMake, AgentRoleWorker, true},
		{"default role is worker", self, "", true},
		{"admin delegates coordinator", admin, AgentRoleCoordinator, true},
		{"member cannot delegate coordinator", member, AgentRoleCoordinator, false},
		{"token cannot delegate coordinator", tokMake, AgentRoleCoordinator, false},
		{"coordinator delegates its own role", coord, AgentRoleCoordinator, true},
		{"worker agent cannot elevate", parent, AgentRoleCoordinator, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CanDelegate(tt.c, tt.role); (got == nil) != tt.ok {
				t.Fatalf("CanDelegate = %v, want ok=%v", got, tt.ok)
			}
		})
	}

	d := NewDelegation(member, "", nil)
	if d.Delegator != "user:um" || len(d.Chain) != 1 || d.Chain[0] != "user:um" {
		t.Fatalf("user delegation = %+v", d)
	}
	d = NewDelegation(tokMake, "", nil)
	if d.Delegator != "user:um" {
		t.Fatalf("a token acts for its owner: %+v", d)
	}
	chain := []string{"user:um"}
	d = NewDelegation(parent, "user:um", chain)
	if d.Delegator != "user:um" || len(d.Chain) != 2 || d.Chain[1] != "agent:a0" || len(chain) != 1 {
		t.Fatalf("agent child delegation = %+v (parent chain %v)", d, chain)
	}

	if got := Redelegate(other, "user:um", false); got != "user:um" {
		t.Errorf("restart keeps the delegator, got %q", got)
	}
	if got := Redelegate(other, "user:um", true); got != "user:uo" {
		t.Errorf("a role change makes the caller the delegator, got %q", got)
	}
	if got := Redelegate(other, "", false); got != "user:uo" {
		t.Errorf("a user re-running an agent with no provenance becomes its delegator, got %q", got)
	}
	if got := Redelegate(parent, "", false); got != "" {
		t.Errorf("an agent does not become a delegator by restarting, got %q", got)
	}
}

func TestPassthrough(t *testing.T) {
	if CanUsePassthrough(member) != nil || CanUsePassthrough(tokMake) == nil || CanUsePassthrough(parent) == nil || CanUsePassthrough(viewer) == nil {
		t.Fatal("only signed-in members and admins lend a passthrough identity")
	}
	if PassthroughAllowed("gcp", []string{"passthrough:gcp"}) != nil || PassthroughAllowed("gcp", nil) == nil || PassthroughAllowed("", nil) != nil {
		t.Fatal("PassthroughAllowed")
	}
	if !ValidScope(ScopeAgentCreate) || ValidScope("broker:read") || !ValidAgentRole("") || ValidAgentRole("root") {
		t.Fatal("validation")
	}
}

func TestAgentScopes(t *testing.T) {
	got, ref := AgentScopes(member, nil)
	if ref != nil || len(got) != 1 || got[0] != ScopeAgentCreate {
		t.Fatalf("user default = %v %v", got, ref)
	}
	if got, _ := AgentScopes(self, nil); len(got) != 0 {
		t.Fatalf("an agent without scopes hands on none, got %v", got)
	}
	if got, _ := AgentScopes(parent, nil); len(got) != 1 {
		t.Fatalf("a child inherits its parent's scopes, got %v", got)
	}
	if _, ref := AgentScopes(self, []string{ScopeAgentCreate}); ref == nil {
		t.Fatal("an agent cannot hand on a scope it lacks")
	}
	if _, ref := AgentScopes(member, []string{ScopeProjectUpdate}); ref == nil {
		t.Fatal("project:update is not an agent scope")
	}
	if got, ref := AgentScopes(member, []string{}); ref != nil || len(got) != 0 {
		t.Fatalf("an explicit empty list means none, got %v %v", got, ref)
	}
}
