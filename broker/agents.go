package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/internal/keylock"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// cleanupTimeout bounds undoing a failed create; the undo runs even when
// the request's own context is what failed.
const cleanupTimeout = 30 * time.Second

// createAgent provisions an agent: its broker-local directories, its
// workspace and its container, started if spec.Start. On failure it undoes
// what it did, so a create either completes or leaves nothing behind.
//
// A host port from the pool may turn out to be taken by a program the
// pool does not know of (another engine client published it between our
// look at the host and the start: two brokers on one host creating at
// once): the create is undone and made again with other ports from the
// pool, keeping the refused port out, createTries in all at most.
func (b *Broker) createAgent(ctx context.Context, spec wire.AgentSpec) (runtime.Status, error) {
	// The create's one check, as the Hub applied it: a forged or older
	// Hub's spec is refused before anything is made.
	if err := specRequest(spec).Validate(); err != nil {
		return runtime.Status{}, err
	}
	if err := b.globalProjectAllowed(spec); err != nil {
		return runtime.Status{}, err
	}
	var refused map[int]bool
	for attempt := 1; ; attempt++ {
		st, err := b.createAgentOnce(ctx, spec, refused)
		if err == nil || attempt == createTries || len(spec.Ports) == 0 || !errors.Is(err, runtime.ErrHostPortTaken) {
			return st, err
		}
		refused = refuse(refused, err)
		b.log.Warn("a published host port is taken on this host by something outside the pool; creating again with other ports",
			"agent", spec.AgentID, "attempt", attempt, "err", err)
	}
}

// createTries bounds the tries of a create whose host port turns out
// taken (each redoes the workspace). Each try sees the ports the earlier
// ones lost, so only a new race with another client of the host fails
// the next one.
const createTries = 3

// refuse adds the port a runtime's HostPortTakenError names to refused.
func refuse(refused map[int]bool, err error) map[int]bool {
	var hp *runtime.HostPortTakenError
	if !errors.As(err, &hp) || hp.Port == 0 {
		return refused
	}
	if refused == nil {
		refused = map[int]bool{}
	}
	refused[hp.Port] = true
	return refused
}

// settingLabels are the spec labels that carry an agent's settings: its
// profile's, the profile's name, the sharing mode, and its own Kubernetes
// settings as scion.k8s.<key>.
func (b *Broker) settingLabels(spec wire.AgentSpec) map[string]string {
	labels := b.profileLabels(spec.Profile)
	if b.cfg.RuntimeTarget != nil {
		labels = b.cfg.AgentDefaults.labels(spec.Harness)
	}
	if spec.Profile != "" {
		labels[runtime.LabelProfile] = spec.Profile
	}
	if spec.SharingMode != "" {
		labels[runtime.LabelSharingMode] = spec.SharingMode
	}
	if spec.PersistentHome {
		labels[runtime.LabelPersistentHome] = "true"
	}
	for k, v := range spec.Kubernetes {
		labels[runtime.LabelKubernetesSetting+k] = v
	}
	return labels
}

func (b *Broker) createAgentOnce(ctx context.Context, spec wire.AgentSpec, refused map[int]bool) (_ runtime.Status, err error) {
	if err := workspace.ValidID("project ID", spec.ProjectID); err != nil {
		return runtime.Status{}, err
	}
	// The runtime refuses settings it will not honour (an agent's own
	// Kubernetes namespace, say) before any directory or clone is made.
	if c, ok := b.rt.(runtime.SpecChecker); ok {
		if err := c.CheckSpec(runtime.Spec{AgentID: spec.AgentID, RunID: spec.RunID, BrokerID: b.cfg.BrokerID,
			ProjectID: spec.ProjectID, Labels: b.settingLabels(spec)}); err != nil {
			return runtime.Status{}, err
		}
	}
	image, command, err := resolveHarness(spec)
	if err != nil {
		return runtime.Status{}, err
	}
	if spec.Image == "" {
		// Only the harness's default image: one the create names wins
		// as it is, as it did over a profile's registry.
		image = b.cfg.AgentDefaults.image(spec.Harness, image)
	}
	if image, err = b.imageFor(spec, image); err != nil {
		return runtime.Status{}, err
	}
	if spec.Reincarnate {
		// The next generation replaces the container of whatever run
		// is there, and gets a home rebuilt from the harness; the
		// workspace stays.
		if err := b.clearForReincarnation(ctx, spec); err != nil {
			return runtime.Status{}, err
		}
	}
	// A second create must not touch a live agent: undoing its failure
	// would delete the first one's directories. The same keyed create
	// again (same run: the Hub's retry of a create whose broker died before
	// it could record the answer, since a recorded one is answered from
	// the record) finishes what the first one got to.
	if st, err := b.rt.Inspect(ctx, spec.AgentID); err == nil {
		if isKeyed(ctx) && spec.RunID != "" && st.RunID == spec.RunID {
			return b.resumeCreate(ctx, spec, st)
		}
		return runtime.Status{}, api.Conflict(api.CodeAlreadyExists, "agent %s already exists on runtime broker %s", spec.AgentID, b.cfg.BrokerID)
	} else if !errors.Is(err, runtime.ErrNotFound) {
		return runtime.Status{}, err
	}

	var undo []func(context.Context)
	defer func() {
		if err == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i](cctx)
		}
	}()

	// The project's shared directory before anything of the agent's: an
	// export that went away refuses the create cheaply (the directory is
	// the project's, kept whatever happens to this create).
	shared, sharedPath, err := b.sharedDir(spec)
	if err != nil {
		return runtime.Status{}, err
	}
	// Ports first: an exhausted pool fails the create before anything is
	// made.
	portsLabel, err := b.allocatePorts(ctx, spec, refused)
	if err != nil {
		return runtime.Status{}, err
	}
	undo = append(undo, func(context.Context) { b.ports.Release(spec.AgentID) })

	dir := b.layout.AgentDir(spec.ProjectID, spec.AgentID)
	if err := b.layout.SafeDir(dir); err != nil {
		return runtime.Status{}, err
	}
	// A directory without a container is a leftover (a crash mid-create,
	// a container removed by hand); reuse it, and on failure remove only
	// what this create made.
	if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
		undo = append(undo, func(context.Context) { b.removeDir(dir) })
	}
	// The home is made by what needs it: buildHome when the harness has
	// files for it, the runtime when it mounts it or runs in it (docker,
	// process). A runtime with homes of its own (kubernetes) needs none
	// here, and a create is a directory cheaper.
	home := filepath.Join(dir, "home")
	if spec.Moved {
		// A home left by an earlier stay of the agent here (a cleanup
		// that failed) was its container's to write: rebuilt, never
		// written through.
		if err := b.removeHome(dir); err != nil {
			return runtime.Status{}, err
		}
	}
	if err := buildHome(home, spec.Harness); err != nil {
		return runtime.Status{}, fmt.Errorf("agent home: %w", err)
	}
	if err := writeHandoff(home, spec.Handoff); err != nil {
		return runtime.Status{}, fmt.Errorf("agent home: %w", err)
	}
	work, kept, err := b.keptWorkspace(spec)
	if err != nil {
		return runtime.Status{}, err
	}
	if !kept {
		if work, err = b.ws.Prepare(ctx, spec); err != nil {
			return runtime.Status{}, err
		}
	}
	if !kept && !spec.Moved && !spec.ConfirmWorkspace {
		// A moved agent's workspace is its work on the export, which a
		// failed create here must never remove (its local directory
		// goes with the undo of the directory above).
		undo = append(undo, func(c context.Context) {
			b.placements.Delete(spec.AgentID)
			if err := b.ws.Remove(c, spec.AgentID); err != nil {
				b.log.Warn("undo create: remove workspace", "agent", spec.AgentID, "err", err)
			}
		})
	}
	b.notePlacement(spec.AgentID, work)

	rs := runtime.Spec{
		AgentID:   spec.AgentID,
		RunID:     spec.RunID,
		BrokerID:  b.cfg.BrokerID,
		ProjectID: spec.ProjectID,
		Slug:      spec.Slug,
		Image:     image,
		Command:   command,
		Env:       b.agentEnv(spec),
		WorkDir:   work,
		HomeDir:   home,
		SecretEnv: secretEnv(spec),
	}
	// Only a worktree's record names a git directory: other modes skip
	// reading back the record Prepare just wrote.
	if spec.SharingMode == api.SharingWorktreePerAgent {
		if rec, rerr := b.AgentWorkspace(spec.AgentID); rerr == nil && rec.GitCommonDir != "" {
			// A worktree's .git file names the base clone's git directory
			// by its host path: a container must see it at that same path.
			rs.Mounts = append(rs.Mounts, runtime.Mount{Source: rec.GitCommonDir, Target: rec.GitCommonDir})
			rs.GitDir = workspace.WorktreeGitDir(work)
		}
	}
	if shared != nil {
		rs.Mounts = append(rs.Mounts, *shared)
	}
	if sharedPath != "" {
		rs.Env[api.EnvSharedDir] = sharedPath
	}
	b.giveHubCA(&rs)
	rs.Labels = b.settingLabels(spec)
	if portsLabel != "" {
		rs.Labels[labelPorts] = portsLabel
	}
	rs.Labels = runtime.SpecLabels(rs)
	st, err := b.rt.Create(ctx, rs)
	if err != nil {
		return runtime.Status{}, err
	}
	undo = append(undo, func(c context.Context) {
		if err := b.rt.Delete(c, spec.AgentID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			b.log.Warn("undo create: delete container", "agent", spec.AgentID, "err", err)
		}
	})
	if spec.Start {
		if st, err = b.rt.Start(ctx, spec.AgentID); err != nil {
			return runtime.Status{}, err
		}
	}
	return st, nil
}

// imageRuntimes are the runtimes that run agents from an image.
var imageRuntimes = map[string]bool{"docker": true, "kubernetes": true}

// imageFor is the image an agent runs: the create's (the Hub fills in its
// Agent Defaults) or its harness's, else the broker's default. With none,
// on a runtime that needs one, the create is refused before anything is
// made, saying how to set one; it used to reach the engine and fail with
// a bare "no image".
func (b *Broker) imageFor(spec wire.AgentSpec, image string) (string, error) {
	if image != "" || !imageRuntimes[b.rt.Name()] {
		return image, nil
	}
	if b.cfg.DefaultImage != "" {
		return b.cfg.DefaultImage, nil
	}
	return "", api.BadRequest("agent %s has no image, and runtime broker %s (%s runtime) has no default one: "+
		"set the Hub's default with `scion hub settings set --default-image IMAGE` (on a Docker host, `scion image build-demo` builds %s locally), "+
		"or pass --image to scion start", cmp.Or(spec.Slug, spec.AgentID), b.cfg.Name, b.rt.Name(), demoImageName).
		WithDetail("fix", "scion hub settings set --default-image IMAGE")
}

// demoImageName is runtime/docker.DemoImage, named here without importing
// the Docker client into every broker.
const demoImageName = "scion-demo:latest"

// resumeCreate answers a create of the same run as an agent the runtime
// already has: an earlier attempt got at least as far as the runtime's
// Create (everything before it, workspace included, is done), and was cut
// short before its answer was recorded, by a broker crash say. What is
// left is the start; the answer is the agent as it now is, which is the
// real outcome of the create. If the start fails, the create fails and is
// undone like any failed create, so the Hub's answer and the broker agree.
func (b *Broker) resumeCreate(ctx context.Context, spec wire.AgentSpec, st runtime.Status) (runtime.Status, error) {
	b.log.Info("create of an agent the runtime already has for this run: resuming it", "agent", spec.AgentID, "run", spec.RunID, "state", st.State)
	if !spec.Start || st.State != runtime.StateCreated {
		return st, nil
	}
	started, err := b.startAgent(ctx, wire.AgentRef{AgentID: spec.AgentID, RunID: spec.RunID})
	if err == nil {
		return started, nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, derr := b.deleteAgent(cctx, wire.AgentRef{AgentID: spec.AgentID, RunID: spec.RunID}); derr != nil && !errors.Is(derr, runtime.ErrNotFound) {
		b.log.Warn("undo resumed create", "agent", spec.AgentID, "err", derr)
	}
	b.ports.Release(spec.AgentID)
	return runtime.Status{}, err
}

// defaultPath is the PATH of an agent when neither its spec nor the
// broker's environment has one.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// agentEnv is the agent's environment: the spec's, with the variables the
// scion CLI inside the agent reads to reach the Hub as this agent. Those
// are set by the broker and win over the spec's.
func (b *Broker) agentEnv(spec wire.AgentSpec) map[string]string {
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, spec.Secrets)
	hub := b.AgentHubEndpoint()
	env[api.EnvHubEndpoint] = hub
	env[api.EnvHubURL] = hub
	env[api.EnvAgentToken] = spec.AgentToken
	env[api.EnvAgentID] = spec.AgentID
	env[api.EnvProject] = spec.ProjectName
	if spec.Handoff != "" {
		env[api.EnvHandoff] = spec.Handoff
	}
	// An agent on the broker's host (the process runtime) finds the scion
	// binary next to the broker's; one in an image keeps its image's PATH,
	// which its runtime completes with the directory the binary is
	// mounted in: the broker's directory and host PATH mean nothing there
	// and would only tell the agent about the host.
	if b.cfg.ScionBinary != "" && !imageRuntimes[b.rt.Name()] {
		path := cmp.Or(env["PATH"], os.Getenv("PATH"), defaultPath)
		env["PATH"] = filepath.Dir(b.cfg.ScionBinary) + string(os.PathListSeparator) + path
	}
	return env
}

func (b *Broker) startAgent(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	if err := b.acquirePorts(ctx, ref.AgentID); err != nil {
		return runtime.Status{}, err
	}
	b.writeAgentToken(ctx, ref)
	return b.rt.Start(ctx, ref.AgentID)
}

func (b *Broker) stopAgent(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	return b.rt.Stop(ctx, ref.AgentID, b.stopGrace(ref))
}

func (b *Broker) restartAgent(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	// Ports before the stop: a restart that cannot get them back must not
	// stop a running agent.
	if err := b.acquirePorts(ctx, ref.AgentID); err != nil {
		return runtime.Status{}, err
	}
	if _, err := b.rt.Stop(ctx, ref.AgentID, b.stopGrace(ref)); err != nil {
		return runtime.Status{}, err
	}
	b.writeAgentToken(ctx, ref)
	return b.rt.Start(ctx, ref.AgentID)
}

func (b *Broker) suspendAgent(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	return b.rt.Suspend(ctx, ref.AgentID)
}

func (b *Broker) resumeAgent(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	if err := b.acquirePorts(ctx, ref.AgentID); err != nil {
		return runtime.Status{}, err
	}
	b.writeAgentToken(ctx, ref)
	return b.rt.Resume(ctx, ref.AgentID)
}

func (b *Broker) inspectAgent(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	return b.rt.Inspect(ctx, ref.AgentID)
}

func (b *Broker) stopGrace(ref wire.AgentRef) time.Duration {
	if ref.GraceMS > 0 {
		return time.Duration(ref.GraceMS) * time.Millisecond
	}
	return b.cfg.StopGrace
}

// deleteAgent removes the agent's container, workspace and broker-local
// directory. A container that is already gone is fine as long as there is
// something left to clean; an agent unknown to both is agent_not_found.
func (b *Broker) deleteAgent(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	b.placements.Delete(ref.AgentID)
	err := b.rt.Delete(ctx, ref.AgentID)
	gone := errors.Is(err, runtime.ErrNotFound)
	if err != nil && !gone {
		return runtime.Status{}, err
	}
	dirs, err := b.layout.FindAgentDirs(ref.AgentID)
	if err != nil {
		return runtime.Status{}, err
	}
	if gone && len(dirs) == 0 {
		return runtime.Status{}, runtime.ErrNotFound
	}
	if err := b.ws.Remove(ctx, ref.AgentID); err != nil {
		return runtime.Status{}, err
	}
	for _, d := range dirs {
		b.removeDir(d)
	}
	return runtime.Status{AgentID: ref.AgentID, RunID: ref.RunID, State: runtime.StateMissing}, nil
}

// removeDir removes an agent directory, refusing anything outside the data
// directory whatever the path says.
func (b *Broker) removeDir(dir string) {
	if err := b.layout.SafeDir(dir); err != nil {
		b.log.Error("refusing to remove a directory outside the data directory", "dir", dir, "err", err)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		b.log.Warn("remove agent directory", "dir", dir, "err", err)
	}
}

// agentLocks serializes the commands for one agent (or one project's
// workspace work) while letting different ones proceed concurrently; a
// wait cut short by ctx answers with the broker's typed error.
type agentLocks struct{ l keylock.Locks }

func (a *agentLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	unlock, err = a.l.Lock(ctx, key)
	if err != nil {
		return nil, workspace.ContextError(err)
	}
	return unlock, nil
}

// Profile settings a runtime reads from the agent's labels: resource
// limits ("512m", "1.5").
var profileLabelKeys = map[string]string{"memory": "scion.memory", "cpus": "scion.cpus"}

// profileLabels returns the labels the agent's profile supplies (its
// resource limits), or an empty map. (A flat instance has no profiles:
// flatLabels stands in for this.)
func (b *Broker) profileLabels(profile string) map[string]string {
	out := map[string]string{}
	for _, p := range b.cfg.Profiles {
		if p.Name != profile {
			continue
		}
		for k, label := range profileLabelKeys {
			if v := p.Settings[k]; v != "" {
				out[label] = v
			}
		}
	}
	return out
}

// specRequest is spec as the create request api.CreateAgentRequest.Validate
// checks: the fields the broker acts on, the secrets by name.
func specRequest(spec wire.AgentSpec) *api.CreateAgentRequest {
	names := make([]string, 0, len(spec.Secrets))
	for n := range spec.Secrets {
		names = append(names, n)
	}
	return &api.CreateAgentRequest{Name: spec.Slug, Project: spec.ProjectName, Profile: spec.Profile, Harness: spec.Harness,
		Image: spec.Image, Command: spec.Command, Env: spec.Env, Ports: spec.Ports, Secrets: names, Kubernetes: spec.Kubernetes}
}

// globalProjectAllowed refuses an agent of a Hub's global project on a
// broker that serves more than one Hub: that project belongs to no team,
// and the broker cannot keep one Hub's from another's by intent.
func (b *Broker) globalProjectAllowed(spec wire.AgentSpec) error {
	// An older Hub does not mark its global project's agents: its name
	// says it.
	if !spec.GlobalProject && spec.ProjectName != api.GlobalProject || b.cfg.HubConnections <= 1 {
		return nil
	}
	return api.Conflict(api.CodeGlobalProjectDisabled,
		"runtime broker %s serves %d Hubs, so it does not run agents of the global project (%s): create a project for them ('scion project create NAME') and start them there",
		b.cfg.Name, b.cfg.HubConnections, api.Quote(spec.ProjectName))
}
