// The checks of a move (an agent reincarnated on another Runtime Broker),
// as one pure function of what the Hub loaded: MoveChecks runs them in the
// spec's fixed order and answers the verdict a dry run shows and a move
// starts from.

package plan

import (
	"slices"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// moveRuntimeTarget is the runtime_target check: a move goes to another
// broker, and moveTargetCheck's flat-broker rules hold.
func moveRuntimeTarget(a *store.Agent, src, dst *store.Broker) *api.Error {
	if src.ID == dst.ID {
		return api.Conflict(api.CodeMoveRefused, "agent %s already runs on runtime broker %s", api.Quote(a.Slug), api.Quote(dst.Name))
	}
	return api.AsError(moveTargetCheck(a, dst))
}

// moveTargetCheck refuses a move that flat Runtime Brokers do not allow
// (spec, "Flat Runtime Brokers"): a pinned agent cannot be moved to
// another broker, and no agent can be moved onto a flat broker, both 409
// runtime_target_move_unsupported. It is nil for a move between regular
// brokers.
func moveTargetCheck(a *store.Agent, target *store.Broker) error {
	if a.Pin != nil {
		return api.Conflict(api.CodeTargetMoveUnsupported,
			"agent %s is pinned to runtime broker %s serving %s and cannot be moved to another runtime broker",
			api.Quote(a.Slug), api.Quote(a.Pin.BrokerID), a.Pin.RuntimeTarget.String()).WithDetail("pinnedRuntimeTarget", *a.Pin)
	}
	if target.RuntimeTarget != nil {
		return api.Conflict(api.CodeTargetMoveUnsupported,
			"runtime broker %s is a flat instance serving %s: agents cannot be moved onto a flat runtime broker",
			api.Quote(target.Name), target.RuntimeTarget.String()).WithDetail("broker", target.Name)
	}
	return nil
}

// MoveBroker is one broker of a move as the Hub knows it: its record, and
// what its last hello reported.
type MoveBroker struct {
	Broker *store.Broker
	Online bool
	// Storage is the broker's workspace storage as its last hello
	// reported it, with the export identity marker it read through its
	// own mount and whether the mount was usable (nil: it reported none,
	// an older broker).
	Storage *wire.WorkspaceStorage
	// Reserved and Limit are its capacity: slots held, and its
	// effective per-broker limit (0: unlimited).
	Reserved, Limit int
}

// MoveInput is everything the checks judge. Agent is the agent's
// configuration as the move would start it (patch flags applied).
type MoveInput struct {
	Agent   *store.Agent
	Project *store.Project
	// Placement is where the source recorded the agent's workspace at
	// its last start (api.PlacementUnknown when it never did).
	Placement      string
	Source, Target MoveBroker
	// TargetServes: the target already serves the agent's project (a
	// provider link); the move links it otherwise.
	TargetServes bool
	// Access is the answer of the caller's permission to move the agent
	// onto Target (MoveAccess), nil when allowed.
	Access *api.Error
	Force  bool
}

// MoveVerdict is the checks' outcome: the plan a dry run answers, and,
// for a refused move, the error of its first failing check.
type MoveVerdict struct {
	Plan api.MovePlan
	Err  error
	// Link: the target does not serve the project yet; the move links it.
	Link bool
}

// exportChecks are the checks --force waives when one of them (or the
// export constraint of target_profile) fails.
var exportChecks = []string{api.CheckWorkspaceStorageReported, api.CheckSameExport, api.CheckWorkspaceOnExport}

// moveRun accumulates the checks' statuses.
type moveRun struct {
	in     *MoveInput
	checks map[string]api.MoveCheck
	err    error // the first failure's
	failed string
}

func (r *moveRun) pass(name string) {
	r.checks[name] = api.MoveCheck{Name: name, Status: api.CheckPassed}
}

// fail records name's failure; the first one decides the answer.
func (r *moveRun) fail(name string, err *api.Error) {
	r.checks[name] = api.MoveCheck{Name: name, Status: api.CheckFailed, Message: err.Message}
	if r.err == nil {
		r.err, r.failed = err.WithDetail("check", name), name
	}
}

// MoveChecks runs the move checks in the spec's order (api.MoveCheckOrder).
// The first failing check decides; the checks after it are not evaluated.
// With Force, a failure of the export checks (or of the Kubernetes export
// constraint of target_profile) waives the three export checks, turns
// the move into a recreate, evaluates workspace_recreatable and judges
// target_profile again for a recreated workspace.
func MoveChecks(in MoveInput) MoveVerdict {
	r := &moveRun{in: &in, checks: map[string]api.MoveCheck{}}
	a, src, dst := in.Agent, in.Source.Broker, in.Target.Broker
	mode := api.TransferExport
	steps := []func() bool{
		func() bool { return r.check(api.CheckRuntimeTarget, moveRuntimeTarget(a, src, dst)) },
		func() bool { return r.check(api.CheckWorkspaceMode, moveWorkspaceMode(in.Project)) },
		func() bool {
			if err := r.exportChecks(); err == nil || !in.Force || !r.waivable() {
				return err == nil
			}
			// Forced: the export cannot carry the workspace, so the move
			// recreates it on the target instead.
			mode, r.err, r.failed = api.TransferRecreate, nil, ""
			for _, c := range exportChecks {
				r.checks[c] = api.MoveCheck{Name: c, Status: api.CheckWaived}
			}
			delete(r.checks, api.CheckTargetProfile)
			return r.check(api.CheckWorkspaceRecreatable, moveRecreatable(in.Project, &in.Target)) &&
				r.check(api.CheckTargetProfile, moveTargetProfile(&in, false))
		},
		func() bool { return r.check(api.CheckTargetHealth, moveHealth(&in, mode)) },
		func() bool { return r.check(api.CheckAccess, in.Access) },
		func() bool { return r.check(api.CheckCapability, moveCapability(&in)) },
		func() bool { return r.check(api.CheckCapacity, moveCapacity(&in.Target)) },
	}
	for _, step := range steps {
		if !step() {
			break
		}
	}
	plan := api.MovePlan{Agent: a.Slug, Source: src.Name, Target: dst.Name, Eligible: r.err == nil}
	for _, name := range api.MoveCheckOrder {
		c, ok := r.checks[name]
		if !ok {
			c = api.MoveCheck{Name: name, Status: api.CheckNotEvaluated}
		}
		plan.Checks = append(plan.Checks, c)
	}
	v := MoveVerdict{Plan: plan, Link: !in.TargetServes}
	if r.err != nil {
		// --force helps only where a recreated workspace could stand in.
		mode := in.Project.SharingMode
		v.Plan.Forceable = !in.Force && r.waivable() && (mode == api.SharingClonePerAgent || mode == api.SharingEmptyPerAgent)
		v.Err = api.AsError(r.err).WithDetail("plan", v.Plan)
		return v
	}
	v.Plan.TransferMode = mode
	v.Plan.Consequences = moveConsequences(mode)
	return v
}

// check records err (nil: passed) as name's outcome; false stops the run.
func (r *moveRun) check(name string, err *api.Error) bool {
	if err != nil {
		r.fail(name, err)
		return false
	}
	r.pass(name)
	return true
}

// exportChecks runs workspace_storage_reported, same_export,
// workspace_on_export and target_profile with its export constraint,
// stopping at the first failure, which it returns.
func (r *moveRun) exportChecks() error {
	in := r.in
	if !r.check(api.CheckWorkspaceStorageReported, moveStorageReported(in)) ||
		!r.check(api.CheckSameExport, moveSameExport(in)) ||
		!r.check(api.CheckWorkspaceOnExport, moveOnExport(in)) ||
		!r.check(api.CheckTargetProfile, moveTargetProfile(in, true)) {
		return r.err
	}
	return nil
}

// waivable: the failure that decided is one --force waives.
func (r *moveRun) waivable() bool {
	if slices.Contains(exportChecks, r.failed) {
		return true
	}
	return r.failed == api.CheckTargetProfile && api.AsError(r.err).Details["exportConstraint"] == true
}

// moveWorkspaceMode is the workspace_mode check: a worktree lives in the
// source's base clone, which no other broker has.
func moveWorkspaceMode(p *store.Project) *api.Error {
	if p.SharingMode == api.SharingWorktreePerAgent {
		return api.Conflict(api.CodeMoveRefused,
			"project %s gives each agent a worktree of the source broker's base clone (worktree-per-agent): its agents cannot move",
			api.Quote(p.Name))
	}
	return nil
}

// moveStorageReported is the workspace_storage_reported check.
func moveStorageReported(in *MoveInput) *api.Error {
	for _, b := range []*MoveBroker{&in.Source, &in.Target} {
		if b.Storage == nil {
			return api.Errorf(api.CodeMoveBrokerOutdated,
				"runtime broker %s does not report its workspace storage: upgrade it to move agents", api.Quote(b.Broker.Name))
		}
	}
	return nil
}

// moveSameExport is the same_export check: both brokers keep workspaces on
// the same NFS export and, through their own mounts, read the same export
// identity marker (the same settings over different directories differ).
func moveSameExport(in *MoveInput) *api.Error {
	s, t := in.Source.Storage, in.Target.Storage
	for _, b := range []*MoveBroker{&in.Source, &in.Target} {
		if b.Storage.Type != "nfs" {
			return api.Conflict(api.CodeMoveRefused,
				"runtime broker %s keeps workspaces on its own disk (server.workspace_storage is not nfs): the workspace cannot reach another broker",
				api.Quote(b.Broker.Name))
		}
	}
	// The message names what differs, not the values: they are the
	// operator's storage addresses, which callers are not shown.
	var differ []string
	for _, f := range []struct{ name, a, b string }{{"server", s.Server, t.Server}, {"export", s.Export, t.Export},
		{"subpath_root", s.SubpathRoot, t.SubpathRoot}} {
		if f.a != f.b {
			differ = append(differ, f.name)
		}
	}
	if len(differ) > 0 {
		return api.Conflict(api.CodeMoveRefused, "runtime brokers %s and %s use different exports (their nfs.shares[0] %s differ)",
			api.Quote(in.Source.Broker.Name), api.Quote(in.Target.Broker.Name), strings.Join(differ, ", "))
	}
	for _, b := range []*MoveBroker{&in.Source, &in.Target} {
		if b.Storage.ExportID == "" {
			return api.Conflict(api.CodeMoveRefused,
				"runtime broker %s could not read or write the export identity marker .scion-export-id in its subpath_root through its mount",
				api.Quote(b.Broker.Name))
		}
	}
	if in.Source.Storage.ExportID != in.Target.Storage.ExportID {
		return api.Conflict(api.CodeMoveRefused,
			"runtime brokers %s and %s configure the same export but mount different directories (their .scion-export-id markers differ)",
			api.Quote(in.Source.Broker.Name), api.Quote(in.Target.Broker.Name))
	}
	return nil
}

// moveOnExport is the workspace_on_export check, on the placement the
// source recorded when it last started the agent.
func moveOnExport(in *MoveInput) *api.Error {
	switch in.Placement {
	case api.PlacementExport:
		return nil
	case api.PlacementUnknown:
		return api.Conflict(api.CodeMoveRefused,
			"where agent %s's workspace is is unknown (it has not started since its broker began recording it): reincarnate it once without --broker",
			api.Quote(in.Agent.Slug))
	}
	return api.Conflict(api.CodeMoveRefused, "agent %s's workspace is on runtime broker %s's own disk, not on the export",
		api.Quote(in.Agent.Slug), api.Quote(in.Source.Broker.Name))
}

// moveProfile is the profile the agent would run under on the target: its
// own, else the project's active profile, else the target's default ("":
// the target has none, and runs the agent on its own runtime).
func moveProfile(in *MoveInput) string {
	if in.Agent.Profile != "" {
		return in.Agent.Profile
	}
	if in.Project.ActiveProfile != "" {
		return in.Project.ActiveProfile
	}
	for _, p := range in.Target.Broker.Profiles {
		if p.Default {
			return p.Name
		}
	}
	return ""
}

// moveTargetProfile is the target_profile check: the profile exists on the
// target; with exportConstraint, a clone-per-agent or empty-per-agent
// workspace is on the export only on Kubernetes with a PV claim, so the
// target must run the profile on Kubernetes and mount the export through
// a claim (a failure --force waives: details.exportConstraint).
func moveTargetProfile(in *MoveInput, exportConstraint bool) *api.Error {
	dst := in.Target.Broker
	name, runtime := moveProfile(in), dst.Runtime
	if name != "" {
		i := slices.IndexFunc(dst.Profiles, func(p api.BrokerProfile) bool { return p.Name == name })
		if i < 0 {
			return api.Conflict(api.CodeProfileNotAvailable, "runtime broker %s has no profile %s", api.Quote(dst.Name), api.Quote(name))
		}
		runtime = dst.Profiles[i].Runtime
	}
	mode := in.Project.SharingMode
	if !exportConstraint || (mode != api.SharingClonePerAgent && mode != api.SharingEmptyPerAgent) {
		return nil
	}
	if runtime != "kubernetes" || in.Target.Storage == nil || in.Target.Storage.PVName == "" {
		return api.Conflict(api.CodeMoveRefused,
			"a %s workspace is on the export only on Kubernetes with a PV claim: runtime broker %s runs the agent's profile on %s without one",
			mode, api.Quote(dst.Name), runtime).WithDetail("exportConstraint", true)
	}
	return nil
}

// moveRecreatable is the workspace_recreatable check of a forced move: a
// fresh workspace can stand in only for a per-agent one, and the target
// must be able to make it.
func moveRecreatable(p *store.Project, target *MoveBroker) *api.Error {
	if p.SharingMode != api.SharingClonePerAgent && p.SharingMode != api.SharingEmptyPerAgent {
		return api.Conflict(api.CodeMoveRefused,
			"project %s's workspace (%s) cannot be recreated on another broker: only clone-per-agent and empty-per-agent ones can",
			api.Quote(p.Name), p.SharingMode)
	}
	if !slices.Contains(target.Broker.Capabilities, wire.CapAgentMoveRecreate) {
		return api.Errorf(api.CodeMoveBrokerOutdated, "runtime broker %s cannot recreate a workspace (it does not advertise %s)",
			api.Quote(target.Broker.Name), wire.CapAgentMoveRecreate)
	}
	return nil
}

// moveHealth is the target_health check: the target is online and, for a
// move over the export, reports its mount healthy (503 otherwise); the
// source is online too, to remove its copy after the move (412).
func moveHealth(in *MoveInput, mode string) *api.Error {
	t := &in.Target
	switch {
	case !t.Online:
		return api.Errorf(api.CodeBrokerOffline, "runtime broker %s is offline", api.Quote(t.Broker.Name))
	case mode == api.TransferExport && (t.Storage == nil || !t.Storage.Healthy):
		return api.Errorf(api.CodeBrokerUnavailable, "runtime broker %s reports its workspace export mount unhealthy", api.Quote(t.Broker.Name))
	case !in.Source.Online:
		return api.Errorf(api.CodeMoveBrokerOutdated,
			"runtime broker %s, where the agent runs, is offline: it must be online to remove its copy of the agent after the move",
			api.Quote(in.Source.Broker.Name))
	}
	return nil
}

// moveCapability is the capability check: both brokers can take part.
func moveCapability(in *MoveInput) *api.Error {
	for _, b := range []*MoveBroker{&in.Source, &in.Target} {
		if !slices.Contains(b.Broker.Capabilities, wire.CapAgentMove) {
			return api.Errorf(api.CodeMoveBrokerOutdated, "runtime broker %s does not support agent moves (%s): upgrade it",
				api.Quote(b.Broker.Name), wire.CapAgentMove)
		}
	}
	return nil
}

// moveCapacity is the capacity check. It only reads the count: the limit
// is enforced when the quota moves, after the stop.
func moveCapacity(t *MoveBroker) *api.Error {
	if t.Limit > 0 && t.Reserved >= t.Limit {
		return api.Errorf(api.CodeQuotaExceeded, "runtime broker %s holds its limit of %d agents", api.Quote(t.Broker.Name), t.Limit)
	}
	return nil
}

// moveConsequences are what a move of each transfer mode keeps, carries,
// recreates and loses.
func moveConsequences(mode string) api.MoveConsequences {
	c := api.MoveConsequences{
		Kept:      []string{"agent ID, slug and generation chain"},
		Carried:   []string{"capacity reservation (source to target)", "handoff (the new generation's preamble)"},
		Recreated: []string{"agent home (from the template and harness config)"},
		Lost:      []string{"harness session history", "exposed ports", "the source broker's local copy (container, agent directory, home)"},
	}
	if mode == api.TransferExport {
		c.Kept = append(c.Kept, "workspace on the export, uncommitted and unpushed changes included")
		return c
	}
	c.Recreated = append(c.Recreated, "workspace (a fresh clone or empty directory on the target)")
	c.Lost = append(c.Lost, "the source workspace's uncommitted and unpushed changes")
	return c
}

// MoveCaller is who asks for a move (the spec's "What each kind of caller
// can reach").
type MoveCaller int

const (
	MoveByUser      MoveCaller = iota // a signed-in user
	MoveByUserToken                   // a user access token (single project)
	MoveBySelf                        // the agent itself
	MoveByAgent                       // another agent (a coordinator moving its child)
)

// MoveAccessInput is what the access check judges: who asks, what they
// hold, and the target's relation to the agent's project.
type MoveAccessInput struct {
	Caller       MoveCaller
	Agent        *store.Agent
	Target       *store.Broker
	TargetServes bool // the target serves the agent's project already
	// For a user: broker.read, broker.dispatch on the target, and
	// project.update on the project. For a token, CanUpdateProject is its
	// project:update scope; for another agent, CanCreateAgents is its
	// project:agent:create scope.
	CanReadBroker, CanDispatch, CanUpdateProject, CanCreateAgents bool
	// PassthroughAllowed: the target allows the agent's passthrough
	// identity (checked again for a move by anyone but the agent).
	PassthroughAllowed bool
}

// MoveTargetVisible reports whether the caller can see the target at all:
// one a user or a user's token cannot see is answered exactly as an
// unknown one (404 runtime_broker_not_found), before any check, so that no
// check's answer tells it anything about the broker. An agent is answered
// 409 for a broker that does not serve its project (the spec's table), so
// for agents every broker is "visible".
func MoveTargetVisible(in MoveAccessInput) bool {
	switch in.Caller {
	case MoveByUser:
		return in.Target.AutoProvide || in.TargetServes || in.CanReadBroker
	case MoveByUserToken:
		return in.Target.AutoProvide || in.TargetServes
	}
	return true
}

// MoveAccess is the access check: nil when the caller may move the agent
// onto the target, else the refusal of the spec's table.
func MoveAccess(in MoveAccessInput) *api.Error {
	name, slug := api.Quote(in.Target.Name), api.Quote(in.Agent.Slug)
	if !MoveTargetVisible(in) {
		return api.NotFound(api.CodeBrokerNotFound, "runtime broker %s not found", name)
	}
	switch in.Caller {
	case MoveBySelf:
		if in.Agent.Passthrough != "" {
			return api.Forbidden("agent %s runs with a %s passthrough identity and cannot move itself: ask a user to move you", slug, in.Agent.Passthrough)
		}
		if !in.TargetServes {
			return api.Conflict(api.CodeMoveRefused, "runtime broker %s does not serve agent %s's project: an agent moves itself only to a broker that does", name, slug)
		}
		return nil
	case MoveByAgent:
		if !in.TargetServes {
			return api.Conflict(api.CodeMoveRefused, "runtime broker %s does not serve the project, and an agent cannot link a broker to it", name)
		}
		if !in.Target.AutoProvide && !in.CanCreateAgents {
			return api.Forbidden("moving an agent to runtime broker %s needs AutoProvide on it or the project:agent:create scope", name)
		}
	case MoveByUserToken:
		if !in.Target.AutoProvide {
			return api.Forbidden("a user access token can move agents only to runtime brokers with AutoProvide on; sign in (scion hub auth login) to reach %s", name)
		}
		if !in.TargetServes && !in.CanUpdateProject {
			return api.Forbidden("runtime broker %s does not serve the project yet: linking it needs the project:update scope", name)
		}
	default:
		if !in.Target.AutoProvide && !in.CanDispatch {
			return api.Forbidden("moving an agent to runtime broker %s needs broker.dispatch on it", name)
		}
		if !in.TargetServes && !in.CanUpdateProject {
			return api.Forbidden("runtime broker %s does not serve the project yet: linking it needs project.update", name)
		}
	}
	if in.Agent.Passthrough != "" && !in.PassthroughAllowed {
		return api.Forbidden("agent %s's %s passthrough identity is not allowed on runtime broker %s", slug, in.Agent.Passthrough, name)
	}
	return nil
}
