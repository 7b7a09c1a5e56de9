package plan

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/placement"
	"github.com/scion-go/scion/store"
)

// Callers of the plan tests.
var (
	tAdmin  = authz.Caller{Kind: authz.User, ID: "u-admin", UserID: "u-admin", Role: authz.RoleAdmin}
	tOwner  = authz.Caller{Kind: authz.User, ID: "u-owner", UserID: "u-owner", Role: authz.RoleMember}
	tMember = authz.Caller{Kind: authz.User, ID: "u-member", UserID: "u-member", Role: authz.RoleMember}
	tToken  = authz.Caller{Kind: authz.Token, ID: "t1", UserID: "u-owner", Role: authz.RoleMember, ProjectID: "p1",
		Scopes: []string{authz.ScopeAgentCreate, authz.ScopeProjectRead, authz.ScopeAgentRead}}
	tAgent = authz.Caller{Kind: authz.Agent, ID: "a-parent", ProjectID: "p1", Role: authz.AgentRoleWorker,
		Scopes: []string{authz.ScopeAgentCreate}}
)

func tProject() *store.Project {
	return &store.Project{ID: "p1", Name: "proj", CreatedBy: "u-owner"}
}

// tBroker is a broker record; opts tweak it.
func tBroker(id string, opts ...func(*store.Broker)) *store.Broker {
	b := &store.Broker{ID: id, Name: "name-" + id, CreatedBy: "u-owner"}
	for _, o := range opts {
		o(b)
	}
	return b
}

func autoProvide(b *store.Broker) { b.AutoProvide = true }

// tCandidates: brokers with who provides and who is online.
func tCandidates(bs []*store.Broker, providers, online []string) BrokerCandidates {
	c := BrokerCandidates{List: bs, Provider: map[string]bool{}, Online: map[string]bool{}}
	for _, id := range providers {
		c.Provider[id] = true
	}
	for _, id := range online {
		c.Online[id] = true
	}
	return c
}

var tNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// tCreate is a create by the project's owner, of agent "a", on the one
// online provider b1, with no start.
func tCreate(mod ...func(*CreateInput)) CreateInput {
	in := CreateInput{Caller: tOwner, Project: tProject(),
		Req:     api.CreateAgentRequest{Name: "a", Harness: api.DefaultHarness},
		Limits:  api.Limits{MaxAgentsPerBroker: api.DefaultMaxAgentsPerBroker},
		Brokers: tCandidates([]*store.Broker{tBroker("b1")}, []string{"b1"}, []string{"b1"}),
		AgentID: "agent-1", RunID: "run-1", Now: tNow}
	for _, m := range mod {
		m(&in)
	}
	return in
}

// wantErr checks err against an expected code and status ("" code: no
// error; "refused": an authz refusal, answered 403).
func wantErr(t *testing.T, err error, code string, status int) {
	t.Helper()
	var ref *Refusal
	switch {
	case code == "":
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	case code == "refused":
		if !errors.As(err, &ref) {
			t.Fatalf("want an authz refusal, got %v", err)
		}
	default:
		e := api.AsError(err)
		if e == nil || e.Code != code || e.Status != status {
			t.Fatalf("want %d %s, got %v", status, code, err)
		}
	}
}

func TestPlanRequest(t *testing.T) {
	defaults := api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultHarness: "gemini", DefaultImage: "img:1"}}
	req, err := CreateRequest(api.CreateAgentRequest{Name: "a", Secrets: []string{"GEMINI_API_KEY"}}, defaults)
	if err != nil || req.Harness != "gemini" || req.Image != "img:1" {
		t.Fatalf("Agent Defaults fill in: %+v %v", req, err)
	}
	// The default harness's credential is the request's to give.
	if _, err := CreateRequest(api.CreateAgentRequest{Name: "a"}, defaults); !api.IsCode(err, api.CodeInvalidRequest) {
		t.Fatalf("gemini by default without its key: %v, want invalid_request", err)
	}
	req, err = CreateRequest(api.CreateAgentRequest{Name: "a", Image: "mine"}, api.HubSettings{})
	if err != nil || req.Harness != api.DefaultHarness || req.Image != "mine" {
		t.Fatalf("the request wins, the harness defaults: %+v %v", req, err)
	}
	for name, req := range map[string]api.CreateAgentRequest{
		"bad name":    {Name: "A B"},
		"env key":     {Name: "a", Env: map[string]string{"1X": "v"}},
		"k8s key":     {Name: "a", Kubernetes: map[string]string{"Bad": "v"}},
		"bad harness": {Name: "a", Harness: "../x"},
	} {
		if _, err := CreateRequest(req, api.HubSettings{}); api.AsError(err).Code != api.CodeInvalidRequest {
			t.Errorf("%s: want invalid_request, got %v", name, err)
		}
	}
}

func TestPlanCreateRefusals(t *testing.T) {
	offline := tCandidates([]*store.Broker{tBroker("b1")}, []string{"b1"}, nil)
	cases := []struct {
		name   string
		in     CreateInput
		code   string
		status int
	}{
		{"ok", tCreate(), "", 0},
		{"invalid role", tCreate(func(in *CreateInput) { in.Req.Role = "boss" }), api.CodeInvalidRequest, 400},
		{"member cannot delegate coordinator", tCreate(func(in *CreateInput) { in.Req.Role = authz.AgentRoleCoordinator }), "refused", 0},
		{"admin delegates coordinator", tCreate(func(in *CreateInput) {
			in.Caller, in.Req.Role = tAdmin, authz.AgentRoleCoordinator
		}), "", 0},
		{"scope not held", tCreate(func(in *CreateInput) {
			in.Caller = tAgent
			in.Parent = &store.Agent{ID: "a-parent"}
			in.Brokers = tCandidates([]*store.Broker{tBroker("b1", autoProvide)}, []string{"b1"}, []string{"b1"})
			in.Req.Scopes = &[]string{authz.ScopeAgentLifecycle}
		}), "refused", 0},
		{"unknown passthrough", tCreate(func(in *CreateInput) { in.Req.Passthrough = "aws" }), api.CodeInvalidRequest, 400},
		{"passthrough by an agent", tCreate(func(in *CreateInput) {
			in.Caller, in.Parent, in.Req.Passthrough = tAgent, &store.Agent{ID: "a-parent"}, "gcp"
		}), "refused", 0},
		{"the parent's record could not be read", tCreate(func(in *CreateInput) {
			in.Caller, in.ParentErr = tAgent, errors.New("disk on fire")
		}), api.CodeInternal, 500},
		{"secrets refused (after the identity)", tCreate(func(in *CreateInput) {
			in.SecretsErr = api.NotFound(api.CodeSecretNotFound, "secret %q not found", "X")
		}), api.CodeSecretNotFound, 404},
		{"identity refusal comes before secrets", tCreate(func(in *CreateInput) {
			in.Req.Role = "boss"
			in.SecretsErr = api.NotFound(api.CodeSecretNotFound, "secret %q not found", "X")
		}), api.CodeInvalidRequest, 400},
		{"offline broker", tCreate(func(in *CreateInput) { in.Brokers = offline }), api.CodeBrokerOffline, 503},
		{"token: broker without AutoProvide", tCreate(func(in *CreateInput) { in.Caller = tToken }), "refused", 0},
		{"token: AutoProvide broker", tCreate(func(in *CreateInput) {
			in.Caller = tToken
			in.Brokers = tCandidates([]*store.Broker{tBroker("b1", autoProvide)}, []string{"b1"}, []string{"b1"})
		}), "", 0},
		{"passthrough the broker does not allow", tCreate(func(in *CreateInput) { in.Req.Passthrough = "gcp" }), "refused", 0},
		{"passthrough the broker allows", tCreate(func(in *CreateInput) {
			in.Req.Passthrough = "gcp"
			in.Brokers.List[0].Capabilities = []string{authz.PassthroughCapability("gcp")}
		}), "", 0},
		{"profile not offered", tCreate(func(in *CreateInput) {
			in.Req.Profile = "gpu"
			in.Brokers.List[0].Profiles = []api.BrokerProfile{{Name: "cpu"}}
		}), api.CodeProfileNotAvailable, 409},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Create(tc.in)
			if tc.code == api.CodeInternal {
				if err == nil || api.IsCode(err, api.CodeInvalidRequest) {
					t.Fatalf("want the read's error, got %v", err)
				}
				return
			}
			wantErr(t, err, tc.code, tc.status)
		})
	}
}

func TestPlanCreatePlacement(t *testing.T) {
	b1, b2, b3 := tBroker("b1"), tBroker("b2"), tBroker("b3")
	all := []*store.Broker{b1, b2, b3}
	// b1 and b2 provide, b3 does not; all online.
	fleet := tCandidates(all, []string{"b1", "b2"}, []string{"b1", "b2", "b3"})
	cases := []struct {
		name     string
		in       CreateInput
		broker   string
		source   string
		autoLink bool
		code     string
		status   int
	}{
		{"single provider", tCreate(), "b1", placement.SourceSingleProvider, false, "", 0},
		{"several providers", tCreate(func(in *CreateInput) { in.Brokers = fleet }), "", "", false, api.CodeMultipleBrokers, 409},
		{"explicit provider", tCreate(func(in *CreateInput) { in.Brokers, in.Req.Broker = fleet, "b2" }), "b2", placement.SourceExplicit, false, "", 0},
		{"explicit by name", tCreate(func(in *CreateInput) { in.Brokers, in.Req.Broker = fleet, "name-b2" }), "b2", placement.SourceExplicit, false, "", 0},
		{"explicit non-provider, owner links it", tCreate(func(in *CreateInput) { in.Brokers, in.Req.Broker = fleet, "b3" }), "b3", placement.SourceExplicit, true, "", 0},
		{"explicit non-provider, member may not link", tCreate(func(in *CreateInput) {
			in.Caller, in.Brokers, in.Req.Broker = tMember, fleet, "b3"
		}), "", "", false, api.CodeBrokerNotProvider, 403},
		{"explicit unknown", tCreate(func(in *CreateInput) { in.Brokers, in.Req.Broker = fleet, "nope" }), "", "", false, api.CodeBrokerNotFound, 404},
		{"explicit the token cannot see", tCreate(func(in *CreateInput) {
			in.Caller, in.Brokers, in.Req.Broker = tToken, fleet, "b3"
		}), "", "", false, api.CodeBrokerNotFound, 404},
		{"project default", tCreate(func(in *CreateInput) { in.Brokers, in.Project.DefaultBrokerID = fleet, "b2" }), "b2", placement.SourceProjectDefault, false, "", 0},
		{"project default offline", tCreate(func(in *CreateInput) {
			in.Brokers, in.Project.DefaultBrokerID = tCandidates(all, []string{"b1", "b2"}, []string{"b1"}), "b2"
		}), "", "", false, api.CodeDefaultBrokerOffline, 503},
		{"hub default", tCreate(func(in *CreateInput) {
			in.Brokers, in.Settings.AgentDefaults.DefaultRuntimeBroker = fleet, "b1"
		}), "b1", placement.SourceHubDefault, false, "", 0},
		{"no provider", tCreate(func(in *CreateInput) { in.Brokers = tCandidates(all, nil, nil) }), "", "", false, api.CodeNoBroker, 409},
		{"every provider offline", tCreate(func(in *CreateInput) { in.Brokers = tCandidates(all, []string{"b1", "b2"}, nil) }), "", "", false, api.CodeBrokerOffline, 503},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Create(tc.in)
			wantErr(t, err, tc.code, tc.status)
			if err != nil {
				return
			}
			if p.Broker.ID != tc.broker || p.Placement.Source != tc.source || p.Opts.LinkProvider != tc.autoLink {
				t.Fatalf("placed on %s by %s (link %v), want %s by %s (link %v)",
					p.Broker.ID, p.Placement.Source, p.Opts.LinkProvider, tc.broker, tc.source, tc.autoLink)
			}
			if p.Agent.BrokerID != tc.broker || p.Agent.Generations[0].BrokerID != tc.broker {
				t.Fatalf("the record names broker %s", p.Agent.BrokerID)
			}
		})
	}
}

func TestPlanCreateRecord(t *testing.T) {
	key := &store.IdempotencyRecord{Caller: "user:u-owner", Key: "k1", RequestHash: "h", CreatedAt: tNow, ExpiresAt: tNow.Add(24 * time.Hour)}
	p, err := Create(tCreate(func(in *CreateInput) {
		in.Key = key
		in.Req.Secrets = []string{"TOKEN"}
		in.Project.ActiveProfile = "dev"
	}))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Agent
	if a.ID != "agent-1" || a.RunID != "run-1" || a.Slug != "a" || a.ProjectID != "p1" || a.Phase != api.PhaseProvisioning ||
		a.Generation != 1 || a.Role != authz.AgentRoleWorker || a.CreatedBy != "user:u-owner" || a.Delegator != "user:u-owner" ||
		a.Profile != "dev" || !a.CreatedAt.Equal(tNow) || len(a.SecretNames) != 1 {
		t.Fatalf("record: %+v", a)
	}
	if p.Key != "create:run-1" {
		t.Fatalf("the broker's key of the create: %q", p.Key)
	}
	if p.Opts.Key != key {
		t.Fatalf("the key's record is written with the agent: %+v", p.Opts.Key)
	}
	// An agent's child: delegated by the parent's delegator, in its chain.
	p, err = Create(tCreate(func(in *CreateInput) {
		in.Caller = tAgent
		in.Parent = &store.Agent{ID: "a-parent", Delegator: "user:u-owner", DelegationChain: []string{"user:u-owner"}}
		in.Brokers = tCandidates([]*store.Broker{tBroker("b1", autoProvide)}, []string{"b1"}, []string{"b1"})
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Agent.ParentAgentID != "a-parent" || p.Agent.Delegator != "user:u-owner" || len(p.Agent.DelegationChain) != 2 {
		t.Fatalf("child: %+v", p.Agent)
	}
}

func TestPlanCreateCapacity(t *testing.T) {
	three := 3
	cases := []struct {
		name      string
		in        CreateInput
		reserve   *int // the limit the transaction reserves under; nil: no slot
		checkRoom bool
		limit     int
	}{
		{"start reserves under the hub limit", tCreate(func(in *CreateInput) { in.Req.Start = true }), &[]int{api.DefaultMaxAgentsPerBroker}[0], false, api.DefaultMaxAgentsPerBroker},
		{"no start: counted, not reserved", tCreate(), nil, true, api.DefaultMaxAgentsPerBroker},
		{"the broker's own limit wins", tCreate(func(in *CreateInput) {
			in.Req.Start = true
			in.Brokers.List[0].Settings.MaxAgents = &three
		}), &three, false, 3},
		{"unlimited: nothing to count", tCreate(func(in *CreateInput) { in.Limits.MaxAgentsPerBroker = 0 }), nil, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Create(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if (p.Opts.ReserveLimit == nil) != (tc.reserve == nil) || (tc.reserve != nil && *p.Opts.ReserveLimit != *tc.reserve) {
				t.Fatalf("ReserveLimit %v, want %v", p.Opts.ReserveLimit, tc.reserve)
			}
			if p.CheckRoom != tc.checkRoom || p.Limit != tc.limit {
				t.Fatalf("CheckRoom %v limit %d, want %v %d", p.CheckRoom, p.Limit, tc.checkRoom, tc.limit)
			}
		})
	}
	p, _ := Create(tCreate(func(in *CreateInput) { in.Limits.MaxAgentsPerBroker = 2 }))
	wantErr(t, p.Room(1), "", 0)
	wantErr(t, p.Room(2), api.CodeQuotaExceeded, http.StatusTooManyRequests)
	// The transaction's refusals, answered as the API says.
	wantErr(t, p.InsertErr(fmt.Errorf("tx: %w", store.ErrQuota)), api.CodeQuotaExceeded, http.StatusTooManyRequests)
	wantErr(t, p.InsertErr(fmt.Errorf("tx: %w", store.ErrAlreadyExists)), api.CodeAlreadyExists, http.StatusConflict)
}

func TestReplaceable(t *testing.T) {
	failed := &store.Agent{ID: "old", ProjectID: "p1", Phase: api.PhaseError, CreatedBy: "user:u-owner"}
	running := &store.Agent{ID: "old", ProjectID: "p1", Phase: api.PhaseRunning, ContainerStatus: api.ContainerRunning, CreatedBy: "user:u-owner"}
	for _, tc := range []struct {
		name     string
		c        authz.Caller
		old      *store.Agent
		inFlight bool
		want     bool
	}{
		{"a failed create's name is taken over", tOwner, failed, false, true},
		{"not while a command is in flight", tOwner, failed, true, false},
		{"not an agent that has a container", tOwner, running, false, false},
		{"not by a caller who may not delete it", tMember, failed, false, false},
	} {
		if got := Replaceable(tc.c, tProject(), tc.old, tc.inFlight); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// flat makes a broker a flat instance serving t.
func flat(t api.RuntimeTarget) func(*store.Broker) {
	return func(b *store.Broker) { b.RuntimeTarget = &t }
}

// tDocker and tKube are in plan_reach_test.go.

// TestPlanCreateFlat: an agent placed on a flat broker, by whichever
// cascade step, is pinned to it and its target and runs with no profile
// (neither the project's active profile nor the broker's default is
// applied); a profile the request names is refused 400 saying why; a
// regular broker's agent is unpinned and keeps its profile.
func TestPlanCreateFlat(t *testing.T) {
	fleet := func(in *CreateInput) {
		in.Brokers = tCandidates([]*store.Broker{tBroker("b1"), tBroker("f1", flat(tKube)), tBroker("f2", flat(tDocker))},
			[]string{"b1", "f1", "f2"}, []string{"b1", "f1", "f2"})
	}
	cases := []struct {
		name    string
		in      CreateInput
		broker  string
		profile string
		pin     *api.PinnedRuntimeTarget
		code    string
		status  int
		words   string // in the refusal
	}{
		{"explicit flat broker", tCreate(fleet, func(in *CreateInput) { in.Req.Broker = "f1" }),
			"f1", "", &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}, "", 0, ""},
		{"explicit by name, docker target", tCreate(fleet, func(in *CreateInput) { in.Req.Broker = "name-f2" }),
			"f2", "", &api.PinnedRuntimeTarget{BrokerID: "f2", RuntimeTarget: tDocker}, "", 0, ""},
		{"project default flat broker", tCreate(fleet, func(in *CreateInput) { in.Project.DefaultBrokerID = "f2" }),
			"f2", "", &api.PinnedRuntimeTarget{BrokerID: "f2", RuntimeTarget: tDocker}, "", 0, ""},
		{"hub default flat broker", tCreate(fleet, func(in *CreateInput) { in.Settings.AgentDefaults.DefaultRuntimeBroker = "f1" }),
			"f1", "", &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}, "", 0, ""},
		{"single provider is flat", tCreate(func(in *CreateInput) {
			in.Brokers = tCandidates([]*store.Broker{tBroker("f1", flat(tKube))}, []string{"f1"}, []string{"f1"})
		}), "f1", "", &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}, "", 0, ""},
		{"explicit non-provider flat broker, linked", tCreate(func(in *CreateInput) {
			in.Brokers = tCandidates([]*store.Broker{tBroker("b1"), tBroker("f1", flat(tKube))}, []string{"b1"}, []string{"b1", "f1"})
			in.Req.Broker = "f1"
		}), "f1", "", &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}, "", 0, ""},
		{"the project's active profile is not applied", tCreate(fleet, func(in *CreateInput) {
			in.Req.Broker, in.Project.ActiveProfile = "f1", "gpu"
		}), "f1", "", &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}, "", 0, ""},
		{"the broker's default profile is not applied", tCreate(func(in *CreateInput) {
			f := tBroker("f1", flat(tKube), func(b *store.Broker) { b.Profiles = []api.BrokerProfile{{Name: "cpu", Default: true}} })
			in.Brokers = tCandidates([]*store.Broker{f}, []string{"f1"}, []string{"f1"})
		}), "f1", "", &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}, "", 0, ""},
		{"a requested profile is refused", tCreate(fleet, func(in *CreateInput) { in.Req.Broker, in.Req.Profile = "f1", "gpu" }),
			"", "", nil, api.CodeInvalidRequest, 400, `runtime broker "name-f1" is a flat instance serving kubernetes:batch/agents and uses no profiles`},
		{"a requested profile is refused when the cascade chose the flat broker", tCreate(fleet, func(in *CreateInput) {
			in.Project.DefaultBrokerID, in.Req.Profile = "f2", "cpu"
		}), "", "", nil, api.CodeInvalidRequest, 400, "flat instance serving docker"},
		{"a record with an incomplete target pins nothing", tCreate(func(in *CreateInput) {
			in.Brokers = tCandidates([]*store.Broker{tBroker("f1", flat(api.RuntimeTarget{Type: api.RuntimeTargetKubernetes}))}, []string{"f1"}, []string{"f1"})
		}), "", "", nil, api.CodeTargetMismatch, 409, "no longer serves a single complete runtime target"},
		{"a regular broker: no pin, the active profile", tCreate(fleet, func(in *CreateInput) {
			in.Req.Broker, in.Project.ActiveProfile = "b1", "dev"
		}), "b1", "dev", nil, "", 0, ""},
		{"a regular broker: the requested profile", tCreate(fleet, func(in *CreateInput) { in.Req.Broker, in.Req.Profile = "b1", "gpu" }),
			"b1", "gpu", nil, "", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Create(tc.in)
			wantErr(t, err, tc.code, tc.status)
			if err != nil {
				if !strings.Contains(err.Error(), tc.words) {
					t.Fatalf("refusal %q does not say %q", err, tc.words)
				}
				return
			}
			a := p.Agent
			if p.Broker.ID != tc.broker || a.BrokerID != tc.broker || a.Profile != tc.profile {
				t.Fatalf("placed on %s with profile %q, want %s with %q", a.BrokerID, a.Profile, tc.broker, tc.profile)
			}
			if (a.Pin == nil) != (tc.pin == nil) || (a.Pin != nil && *a.Pin != *tc.pin) {
				t.Fatalf("pin %+v, want %+v", a.Pin, tc.pin)
			}
		})
	}
}
