package plan

import (
	"github.com/scion-go/scion/wire"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func TestMoveTargetCheck(t *testing.T) {
	pin := &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}
	regular, flatB := tBroker("b2"), tBroker("f2", flat(tDocker))
	for _, tc := range []struct {
		name   string
		agent  *store.Agent
		target *store.Broker
		code   string
	}{
		{"regular agent to a regular broker", &store.Agent{Slug: "a", BrokerID: "b1"}, regular, ""},
		{"regular agent onto a flat broker", &store.Agent{Slug: "a", BrokerID: "b1"}, flatB, api.CodeTargetMoveUnsupported},
		{"pinned agent to a regular broker", &store.Agent{Slug: "a", BrokerID: "f1", Pin: pin}, regular, api.CodeTargetMoveUnsupported},
		{"pinned agent to another flat broker", &store.Agent{Slug: "a", BrokerID: "f1", Pin: pin}, flatB, api.CodeTargetMoveUnsupported},
		{"pinned agent to another flat broker serving its target", &store.Agent{Slug: "a", BrokerID: "f1", Pin: pin}, tBroker("f3", flat(tKube)), api.CodeTargetMoveUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := 0
			if tc.code != "" {
				status = http.StatusConflict
			}
			wantErr(t, moveTargetCheck(tc.agent, tc.target), tc.code, status)
		})
	}
}

// tMove is an eligible export move of agent "a" (a shared-workspace
// project) from b1 to b2, both on the same export; edit tweaks it.
func tMove(edit ...func(*MoveInput)) MoveInput {
	storage := func() *wire.WorkspaceStorage {
		return &wire.WorkspaceStorage{Type: "nfs", Server: "nfs.lan", Export: "/srv/scion", SubpathRoot: "/ws", ExportID: "x1", Healthy: true}
	}
	caps := []string{wire.CapAgentMove}
	in := MoveInput{
		Agent:     &store.Agent{ID: "a1", Slug: "a", BrokerID: "b1"},
		Project:   &store.Project{ID: "p1", Name: "proj", SharingMode: api.SharingSharedWorkspace},
		Placement: api.PlacementExport,
		Source: MoveBroker{Broker: tBroker("b1", func(b *store.Broker) { b.Capabilities = caps; b.Runtime = "docker" }),
			Online: true, Storage: storage()},
		Target: MoveBroker{Broker: tBroker("b2", func(b *store.Broker) { b.Capabilities = caps; b.Runtime = "docker" }),
			Online: true, Storage: storage(), Reserved: 1, Limit: 2},
		TargetServes: true,
	}
	for _, e := range edit {
		e(&in)
	}
	return in
}

// kubeTarget makes the target run its default profile on Kubernetes and
// claim the export through a PV; recreate lets it recreate workspaces.
func kubeTarget(pv string, recreate bool) func(*MoveInput) {
	return func(in *MoveInput) {
		in.Target.Broker.Profiles = []api.BrokerProfile{{Name: "k8s", Runtime: "kubernetes", Default: true}}
		in.Target.Storage.PVName = pv
		if recreate {
			in.Target.Broker.Capabilities = append(in.Target.Broker.Capabilities, wire.CapAgentMoveRecreate)
		}
	}
}

func mode(m string) func(*MoveInput) { return func(in *MoveInput) { in.Project.SharingMode = m } }
func forced(in *MoveInput)           { in.Force = true }

// statuses is a plan's checks as "name=status" in order.
func statuses(p api.MovePlan) map[string]string {
	m := map[string]string{}
	for _, c := range p.Checks {
		m[c.Name] = c.Status
	}
	return m
}

// TestMoveChecks: each check's failure, alone in an otherwise eligible
// move: the first failing check decides (its code and status), the checks
// after it are not evaluated, the ones before passed, and whether --force
// could help is said.
func TestMoveChecks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      func(*MoveInput)
		check     string // the failing check ("": eligible)
		code      string
		status    int
		forceable bool
	}{
		{"eligible", func(*MoveInput) {}, "", "", 0, false},
		{"same broker", func(in *MoveInput) { in.Target = in.Source }, api.CheckRuntimeTarget, api.CodeMoveRefused, 409, false},
		{"pinned agent", func(in *MoveInput) { in.Agent.Pin = &api.PinnedRuntimeTarget{BrokerID: "b1", RuntimeTarget: tDocker} },
			api.CheckRuntimeTarget, api.CodeTargetMoveUnsupported, 409, false},
		{"onto a flat broker", func(in *MoveInput) { flat(tKube)(in.Target.Broker) }, api.CheckRuntimeTarget, api.CodeTargetMoveUnsupported, 409, false},
		{"worktree-per-agent", mode(api.SharingWorktreePerAgent), api.CheckWorkspaceMode, api.CodeMoveRefused, 409, false},
		{"source reports no storage", func(in *MoveInput) { in.Source.Storage = nil }, api.CheckWorkspaceStorageReported, api.CodeMoveBrokerOutdated, 412, false},
		{"target reports no storage", func(in *MoveInput) { in.Target.Storage = nil }, api.CheckWorkspaceStorageReported, api.CodeMoveBrokerOutdated, 412, false},
		{"target local storage", func(in *MoveInput) { in.Target.Storage = &wire.WorkspaceStorage{Type: "local"} }, api.CheckSameExport, api.CodeMoveRefused, 409, false},
		{"another export", func(in *MoveInput) { in.Target.Storage.Export = "/srv/other" }, api.CheckSameExport, api.CodeMoveRefused, 409, false},
		{"another subpath root", func(in *MoveInput) { in.Target.Storage.SubpathRoot = "/ws2" }, api.CheckSameExport, api.CodeMoveRefused, 409, false},
		{"same settings, other directory", func(in *MoveInput) { in.Target.Storage.ExportID = "x2" }, api.CheckSameExport, api.CodeMoveRefused, 409, false},
		{"marker unreadable", func(in *MoveInput) { in.Source.Storage.ExportID = "" }, api.CheckSameExport, api.CodeMoveRefused, 409, false},
		{"placement unknown", func(in *MoveInput) { in.Placement = api.PlacementUnknown }, api.CheckWorkspaceOnExport, api.CodeMoveRefused, 409, false},
		{"workspace local", func(in *MoveInput) { in.Placement = api.PlacementLocal }, api.CheckWorkspaceOnExport, api.CodeMoveRefused, 409, false},
		{"profile missing on target", func(in *MoveInput) { in.Agent.Profile = "gpu" }, api.CheckTargetProfile, api.CodeProfileNotAvailable, 409, false},
		{"project profile missing on target", func(in *MoveInput) { in.Project.ActiveProfile = "gpu" }, api.CheckTargetProfile, api.CodeProfileNotAvailable, 409, false},
		{"clone-per-agent onto docker", mode(api.SharingClonePerAgent), api.CheckTargetProfile, api.CodeMoveRefused, 409, true},
		// --force helps only where a recreated workspace can stand in: a
		// per-agent one (the shared-workspace cases above say not forceable).
		{"clone-per-agent workspace local", func(in *MoveInput) { mode(api.SharingClonePerAgent)(in); in.Placement = api.PlacementLocal },
			api.CheckWorkspaceOnExport, api.CodeMoveRefused, 409, true},
		{"empty-per-agent, another export", func(in *MoveInput) { mode(api.SharingEmptyPerAgent)(in); in.Target.Storage.ExportID = "x2" },
			api.CheckSameExport, api.CodeMoveRefused, 409, true},
		{"clone-per-agent onto kubernetes without a claim", func(in *MoveInput) { mode(api.SharingClonePerAgent)(in); kubeTarget("", false)(in) },
			api.CheckTargetProfile, api.CodeMoveRefused, 409, true},
		{"clone-per-agent onto kubernetes with a claim", func(in *MoveInput) { mode(api.SharingClonePerAgent)(in); kubeTarget("pv-ws", false)(in) }, "", "", 0, false},
		{"target offline", func(in *MoveInput) { in.Target.Online = false }, api.CheckTargetHealth, api.CodeBrokerOffline, 503, false},
		{"target mount unhealthy", func(in *MoveInput) { in.Target.Storage.Healthy = false }, api.CheckTargetHealth, api.CodeBrokerUnavailable, 503, false},
		{"source offline", func(in *MoveInput) { in.Source.Online = false }, api.CheckTargetHealth, api.CodeMoveBrokerOutdated, 412, false},
		{"access refused", func(in *MoveInput) { in.Access = api.Forbidden("no") }, api.CheckAccess, api.CodeForbidden, 403, false},
		{"target without agent-move", func(in *MoveInput) { in.Target.Broker.Capabilities = nil }, api.CheckCapability, api.CodeMoveBrokerOutdated, 412, false},
		{"source without agent-move", func(in *MoveInput) { in.Source.Broker.Capabilities = nil }, api.CheckCapability, api.CodeMoveBrokerOutdated, 412, false},
		{"target full", func(in *MoveInput) { in.Target.Reserved = 2 }, api.CheckCapacity, api.CodeQuotaExceeded, 429, false},
		{"target unlimited", func(in *MoveInput) { in.Target.Reserved, in.Target.Limit = 50, 0 }, "", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := MoveChecks(tMove(tc.edit))
			st := statuses(v.Plan)
			if len(v.Plan.Checks) != len(api.MoveCheckOrder) {
				t.Fatalf("%d checks, want all %d", len(v.Plan.Checks), len(api.MoveCheckOrder))
			}
			for i, c := range v.Plan.Checks {
				if c.Name != api.MoveCheckOrder[i] {
					t.Fatalf("check %d is %s, want %s", i, c.Name, api.MoveCheckOrder[i])
				}
			}
			if tc.check == "" {
				wantErr(t, v.Err, "", 0)
				if !v.Plan.Eligible || v.Plan.TransferMode != api.TransferExport {
					t.Fatalf("plan %+v, want an eligible export move", v.Plan)
				}
				for name, s := range st {
					want := api.CheckPassed
					if name == api.CheckWorkspaceRecreatable {
						want = api.CheckNotEvaluated
					}
					if s != want {
						t.Errorf("%s %s, want %s", name, s, want)
					}
				}
				return
			}
			wantErr(t, v.Err, tc.code, tc.status)
			if got := api.AsError(v.Err).Details["check"]; got != tc.check {
				t.Errorf("details.check %v, want %s", got, tc.check)
			}
			if v.Plan.Eligible || v.Plan.TransferMode != "" || v.Plan.Forceable != tc.forceable {
				t.Errorf("plan eligible %v, mode %q, forceable %v; want refused, no mode, forceable %v",
					v.Plan.Eligible, v.Plan.TransferMode, v.Plan.Forceable, tc.forceable)
			}
			seen := false
			for _, name := range api.MoveCheckOrder {
				want := api.CheckPassed
				switch {
				case name == tc.check:
					want, seen = api.CheckFailed, true
				case seen || name == api.CheckWorkspaceRecreatable:
					want = api.CheckNotEvaluated
				}
				if st[name] != want {
					t.Errorf("%s %s, want %s", name, st[name], want)
				}
			}
		})
	}
}

// TestMoveChecksForce: --force keeps an eligible export move an export
// move; waives the export checks only on their failures (and on the
// Kubernetes export constraint of target_profile), then judges
// workspace_recreatable and target_profile for a recreated workspace; a
// failure it does not waive still refuses.
func TestMoveChecksForce(t *testing.T) {
	waived := []string{api.CheckWorkspaceStorageReported, api.CheckSameExport, api.CheckWorkspaceOnExport}
	for _, tc := range []struct {
		name   string
		edit   []func(*MoveInput)
		mode   string // "" refused
		check  string // the refusing check
		code   string
		status int
	}{
		{"eligible export move stays export", []func(*MoveInput){forced}, api.TransferExport, "", "", 0},
		{"other export, clone-per-agent, target can recreate", []func(*MoveInput){forced, mode(api.SharingClonePerAgent), kubeTarget("", true),
			func(in *MoveInput) { in.Target.Storage.ExportID = "x2" }}, api.TransferRecreate, "", "", 0},
		{"empty-per-agent onto docker", []func(*MoveInput){forced, mode(api.SharingEmptyPerAgent),
			func(in *MoveInput) {
				in.Target.Broker.Capabilities = append(in.Target.Broker.Capabilities, wire.CapAgentMoveRecreate)
			}},
			api.TransferRecreate, "", "", 0},
		{"older target broker, clone-per-agent", []func(*MoveInput){forced, mode(api.SharingClonePerAgent),
			func(in *MoveInput) {
				in.Target.Storage = nil
				in.Target.Broker.Capabilities = append(in.Target.Broker.Capabilities, wire.CapAgentMoveRecreate)
			}}, api.TransferRecreate, "", "", 0},
		{"unknown placement, clone-per-agent", []func(*MoveInput){forced, mode(api.SharingClonePerAgent), kubeTarget("pv", true),
			func(in *MoveInput) { in.Placement = api.PlacementUnknown }}, api.TransferRecreate, "", "", 0},
		{"shared workspace cannot be recreated", []func(*MoveInput){forced, func(in *MoveInput) { in.Target.Storage.ExportID = "x2" }},
			"", api.CheckWorkspaceRecreatable, api.CodeMoveRefused, 409},
		{"target without agentMoveRecreate", []func(*MoveInput){forced, mode(api.SharingClonePerAgent)},
			"", api.CheckWorkspaceRecreatable, api.CodeMoveBrokerOutdated, 412},
		{"profile missing is not waived", []func(*MoveInput){forced, mode(api.SharingClonePerAgent), kubeTarget("", true),
			func(in *MoveInput) { in.Agent.Profile = "gpu" }}, "", api.CheckTargetProfile, api.CodeProfileNotAvailable, 409},
		{"profile missing after a waiver", []func(*MoveInput){forced, mode(api.SharingClonePerAgent), kubeTarget("", true),
			func(in *MoveInput) { in.Placement = api.PlacementLocal; in.Agent.Profile = "gpu" }}, "", api.CheckTargetProfile, api.CodeProfileNotAvailable, 409},
		{"capacity is not waived", []func(*MoveInput){forced, mode(api.SharingClonePerAgent), kubeTarget("", true),
			func(in *MoveInput) { in.Target.Reserved = 2 }}, "", api.CheckCapacity, api.CodeQuotaExceeded, 429},
		{"recreate needs no healthy mount", []func(*MoveInput){forced, mode(api.SharingClonePerAgent), kubeTarget("", true),
			func(in *MoveInput) { in.Target.Storage.Healthy = false }}, api.TransferRecreate, "", "", 0},
		{"offline source is not waived", []func(*MoveInput){forced, mode(api.SharingClonePerAgent), kubeTarget("", true),
			func(in *MoveInput) { in.Source.Online = false }}, "", api.CheckTargetHealth, api.CodeMoveBrokerOutdated, 412},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := MoveChecks(tMove(tc.edit...))
			st := statuses(v.Plan)
			if v.Plan.Forceable {
				t.Errorf("a forced move's plan says forceable")
			}
			if tc.mode == "" {
				wantErr(t, v.Err, tc.code, tc.status)
				if got := api.AsError(v.Err).Details["check"]; got != tc.check || st[tc.check] != api.CheckFailed {
					t.Errorf("refused by %v (%s), want %s failed", got, st[tc.check], tc.check)
				}
				return
			}
			wantErr(t, v.Err, "", 0)
			if v.Plan.TransferMode != tc.mode {
				t.Fatalf("transfer mode %q, want %q", v.Plan.TransferMode, tc.mode)
			}
			for _, name := range api.MoveCheckOrder {
				want := api.CheckPassed
				switch {
				case tc.mode == api.TransferRecreate && slices.Contains(waived, name):
					want = api.CheckWaived
				case tc.mode == api.TransferExport && name == api.CheckWorkspaceRecreatable:
					want = api.CheckNotEvaluated
				}
				if st[name] != want {
					t.Errorf("%s %s, want %s", name, st[name], want)
				}
			}
			lostChanges := slices.ContainsFunc(v.Plan.Consequences.Lost, func(s string) bool { return strings.Contains(s, "uncommitted") })
			if lostChanges != (tc.mode == api.TransferRecreate) {
				t.Errorf("consequences %+v: uncommitted changes lost %v in a %s move", v.Plan.Consequences, lostChanges, tc.mode)
			}
		})
	}
}

// TestMoveAccess: the spec's table of who can move an agent where.
func TestMoveAccess(t *testing.T) {
	agent := &store.Agent{Slug: "a"}
	gcp := &store.Agent{Slug: "a", Passthrough: "gcp"}
	plain, auto := tBroker("b2"), tBroker("b2", autoProvide)
	for _, tc := range []struct {
		name string
		in   MoveAccessInput
		code string
	}{
		// Signed-in user.
		{"user: unseen broker", MoveAccessInput{Caller: MoveByUser, Agent: agent, Target: plain}, api.CodeBrokerNotFound},
		{"user: read but no dispatch", MoveAccessInput{Caller: MoveByUser, Agent: agent, Target: plain, CanReadBroker: true, TargetServes: true}, api.CodeForbidden},
		{"user: serving broker without dispatch", MoveAccessInput{Caller: MoveByUser, Agent: agent, Target: plain, TargetServes: true}, api.CodeForbidden},
		{"user: dispatch, serving", MoveAccessInput{Caller: MoveByUser, Agent: agent, Target: plain, CanReadBroker: true, CanDispatch: true, TargetServes: true}, ""},
		{"user: dispatch, link without project.update", MoveAccessInput{Caller: MoveByUser, Agent: agent, Target: plain, CanReadBroker: true, CanDispatch: true}, api.CodeForbidden},
		{"user: dispatch, link with project.update", MoveAccessInput{Caller: MoveByUser, Agent: agent, Target: plain, CanReadBroker: true, CanDispatch: true, CanUpdateProject: true}, ""},
		{"user: AutoProvide needs no dispatch", MoveAccessInput{Caller: MoveByUser, Agent: agent, Target: auto, TargetServes: true}, ""},
		{"user: passthrough not allowed on target", MoveAccessInput{Caller: MoveByUser, Agent: gcp, Target: auto, TargetServes: true}, api.CodeForbidden},
		{"user: passthrough allowed on target", MoveAccessInput{Caller: MoveByUser, Agent: gcp, Target: auto, TargetServes: true, PassthroughAllowed: true}, ""},
		// User access token.
		{"token: unseen broker", MoveAccessInput{Caller: MoveByUserToken, Agent: agent, Target: plain, CanReadBroker: true, CanDispatch: true}, api.CodeBrokerNotFound},
		{"token: serving broker without AutoProvide", MoveAccessInput{Caller: MoveByUserToken, Agent: agent, Target: plain, TargetServes: true}, api.CodeForbidden},
		{"token: AutoProvide, serving", MoveAccessInput{Caller: MoveByUserToken, Agent: agent, Target: auto, TargetServes: true}, ""},
		{"token: AutoProvide, link without project:update", MoveAccessInput{Caller: MoveByUserToken, Agent: agent, Target: auto}, api.CodeForbidden},
		{"token: AutoProvide, link with project:update", MoveAccessInput{Caller: MoveByUserToken, Agent: agent, Target: auto, CanUpdateProject: true}, ""},
		// The agent itself.
		{"self: serving broker", MoveAccessInput{Caller: MoveBySelf, Agent: agent, Target: plain, TargetServes: true}, ""},
		{"self: not serving, even with AutoProvide", MoveAccessInput{Caller: MoveBySelf, Agent: agent, Target: auto}, api.CodeMoveRefused},
		{"self: GCP passthrough", MoveAccessInput{Caller: MoveBySelf, Agent: gcp, Target: plain, TargetServes: true, PassthroughAllowed: true}, api.CodeForbidden},
		{"self: any passthrough", MoveAccessInput{Caller: MoveBySelf, Agent: &store.Agent{Slug: "a", Passthrough: "aws"}, Target: plain, TargetServes: true, PassthroughAllowed: true}, api.CodeForbidden},
		// Another agent.
		{"agent: serving, AutoProvide", MoveAccessInput{Caller: MoveByAgent, Agent: agent, Target: auto, TargetServes: true}, ""},
		{"agent: serving, no AutoProvide, no scope", MoveAccessInput{Caller: MoveByAgent, Agent: agent, Target: plain, TargetServes: true}, api.CodeForbidden},
		{"agent: serving, project:agent:create", MoveAccessInput{Caller: MoveByAgent, Agent: agent, Target: plain, TargetServes: true, CanCreateAgents: true}, ""},
		{"agent: never links", MoveAccessInput{Caller: MoveByAgent, Agent: agent, Target: auto, CanCreateAgents: true, CanUpdateProject: true}, api.CodeMoveRefused},
		{"agent: passthrough checked again", MoveAccessInput{Caller: MoveByAgent, Agent: gcp, Target: auto, TargetServes: true}, api.CodeForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := MoveAccess(tc.in)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Code != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			if (tc.code == api.CodeBrokerNotFound) == MoveTargetVisible(tc.in) {
				t.Errorf("MoveTargetVisible disagrees with the 404")
			}
		})
	}
}
