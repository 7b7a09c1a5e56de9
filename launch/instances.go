package launch

// Flat Runtime Broker instances (multi-broker spec, "Flat Runtime Brokers
// (experimental)"): a process with server.broker.instances hosts only
// them, one broker.Broker session per instance, each with its own broker
// ID and credentials, its own runtime on its one target, its own data
// directory (<data_dir>/instances/<key>) and its own part of the port
// range. An entry that does not validate stops the start; an instance that
// cannot serve (no credentials, its Docker daemon or cluster unreachable)
// is refused and reported while the others run.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/kubernetes"
	"github.com/scion-go/scion/spoke/fleet"
)

// clusterCheckTimeout is how long an instance's API server has to answer
// at start before the instance is refused.
const clusterCheckTimeout = 5 * time.Second

// instanceHost builds the instances of one process: what they share.
type instanceHost struct {
	settings *config.Settings
	hub      string // the Hub endpoint the instances dial
	version  string
	// heartbeat and grace tune the control channels (0: defaults).
	heartbeat, grace time.Duration
	portRange        [2]int // the process's range, split among the instances
	dataDir          string // server.broker.data_dir (or the default)
	gitWorkspaces    workspace.GitConfig
	sharedDirs       *workspace.Export // server.shared_dir_storage's, checked once (nil: local)
	log              *slog.Logger
	// runtime builds an instance's runtime (newInstanceRuntime; tests
	// replace it).
	runtime func(ctx context.Context, h *instanceHost, in config.Instance, target api.RuntimeTarget, brokerID, dataDir string) (instanceRuntime, error)
	// fleet is the fleet file's clusters, the instances' only fleet (a
	// flat instance has no profile); nil runs no Jobs.
	fleet *fleet.Fleet

	dockerOnce   sync.Once
	dockerEnv    dockerEnv // the agents' network and image, made once for every Docker instance
	dockerEnvErr error
}

// instanceRuntime is an instance's runtime with what its broker needs to
// know about it.
type instanceRuntime struct {
	rt           runtime.Runtime
	agentHub     string // the Hub address agents use, when not the broker's
	defaultImage string // a Docker instance's locally built demo image
}

type dockerEnv struct{ network, agentHub, defaultImage string }

// hostedInstance is an instance ready to serve.
type hostedInstance struct {
	key, brokerID string
	target        api.RuntimeTarget
	b             *broker.Broker
	rt            runtime.Runtime
}

// parseInstances reads server.broker.instances and resolves every
// target: a Kubernetes instance without a context takes the kubeconfig's
// current one, without a namespace "default". An entry that does not
// validate is an error naming it and its field (the start is refused).
func parseInstances(s *config.Settings) ([]config.Instance, []api.RuntimeTarget, error) {
	ins, err := s.Server.Broker.Instances.Parse()
	if err != nil {
		return nil, nil, err
	}
	current := ""
	if slices.ContainsFunc(ins, func(in config.Instance) bool {
		return in.RuntimeTarget.Type == api.RuntimeTargetKubernetes && in.RuntimeTarget.Context == ""
	}) {
		k, err := s.Server.Broker.Kubernetes()
		if err != nil {
			return nil, nil, err
		}
		// No kubeconfig (a broker in a pod) leaves the context unknown:
		// those instances are refused, naming the setting to give.
		current, _ = kubernetes.CurrentContext(k.Kubeconfig)
	}
	resolved, err := config.ResolveTargets(ins, current)
	if err != nil {
		return nil, nil, err
	}
	targets := make([]api.RuntimeTarget, len(resolved))
	for i, t := range resolved {
		targets[i] = api.RuntimeTarget(t)
	}
	return ins, targets, nil
}

// splitPortRange cuts the inclusive range r into n disjoint consecutive
// parts of equal size (the remainder unused), one per instance in the
// order of server.broker.instances, so that an instance's part does not
// depend on which of the others can serve.
func splitPortRange(r [2]int, n int) ([][2]int, error) {
	size := r[1] - r[0] + 1
	if n <= 0 || size < n {
		return nil, fmt.Errorf("port range %d-%d has %d ports, too few for %d instances", r[0], r[1], max(size, 0), n)
	}
	each := size / n
	out := make([][2]int, n)
	for i := range out {
		out[i] = [2]int{r[0] + i*each, r[0] + (i+1)*each - 1}
	}
	return out, nil
}

// agentDefaults maps an instance's agent_defaults onto what the broker
// applies: image_registry, resources, required_secrets, clone_depth and
// harness_overrides' image and resources. Resources are Kubernetes
// quantities in settings.yaml ("4Gi", "500m" CPUs); the runtimes' labels
// take bytes and a number of CPUs. harness_config (also per harness) and
// volumes are read but not applied: this broker has no harness
// configurations and no operator volumes yet.
func agentDefaults(d config.AgentDefaults) (broker.AgentDefaults, error) {
	out := broker.AgentDefaults{ImageRegistry: d.ImageRegistry, RequiredSecrets: slices.Clone(d.RequiredSecrets)}
	if d.CloneDepth != nil {
		out.CloneDepth = *d.CloneDepth
	}
	var err error
	if out.Memory, out.CPUs, err = resourceLabels("agent_defaults.resources", d.Resources); err != nil {
		return out, err
	}
	for h, o := range d.HarnessOverrides {
		hd := broker.HarnessDefaults{Image: o.Image}
		if hd.Memory, hd.CPUs, err = resourceLabels("agent_defaults.harness_overrides."+h+".resources", o.Resources); err != nil {
			return out, err
		}
		if hd != (broker.HarnessDefaults{}) {
			if out.Harness == nil {
				out.Harness = map[string]broker.HarnessDefaults{}
			}
			out.Harness[h] = hd
		}
	}
	return out, nil
}

// resourceLabels are the scion.memory and scion.cpus label values of r:
// bytes, and CPUs to the millicore.
func resourceLabels(field string, r *config.Resources) (memory, cpus string, err error) {
	if r == nil {
		return "", "", nil
	}
	if r.Memory != "" {
		// Under 1Mi (memory "512m" is 0.512 bytes) no agent can run:
		// config refuses it at the start; this is the same rule.
		q, err := resource.ParseQuantity(r.Memory)
		if err != nil || q.Cmp(resource.MustParse("1Mi")) < 0 {
			return "", "", fmt.Errorf("%s.memory %s: a quantity of at least 1Mi like 4Gi is expected", field, api.Quote(r.Memory))
		}
		memory = strconv.FormatInt(q.Value(), 10)
	}
	if r.CPUs != "" {
		// Under a millicore the label would be 0 CPUs, refused at
		// every create.
		q, err := resource.ParseQuantity(r.CPUs)
		if err != nil || q.Cmp(resource.MustParse("1m")) < 0 {
			return "", "", fmt.Errorf("%s.cpus %s: a quantity of at least 1m (0.001 CPUs) like 1.5 is expected", field, api.Quote(r.CPUs))
		}
		cpus = strconv.FormatFloat(math.Round(q.AsApproximateFloat64()*1000)/1000, 'f', -1, 64)
	}
	return memory, cpus, nil
}

// serve builds every instance at once and serves each as soon as it is
// ready, until ctx ends; conns holds each one's saved connection (nil:
// not registered). An instance whose runtime is slow or hangs while it is
// built (a Docker engine that answers the ping and then nothing, a first
// demo image build) does not hold the others back. A refused instance is
// logged with its key and reason. serve returns once ctx has ended and
// every instance has stopped; with no instance able to serve, an error
// naming each and its reason (a stop meanwhile is no error). A port range
// too small to split refuses them all before anything is built.
func (h *instanceHost) serve(ctx context.Context, ins []config.Instance, targets []api.RuntimeTarget, conns []*config.BrokerConnection) error {
	ranges, err := splitPortRange(cmp.Or(h.portRange, broker.DefaultPortRange), len(ins))
	if err != nil {
		return err
	}
	type built struct {
		i   int
		hi  *hostedInstance
		err error
	}
	ready := make(chan built, len(ins))
	for i, in := range ins {
		go func() {
			hi, err := h.prepareOne(ctx, in, targets[i], conns[i], ranges[i])
			ready <- built{i, hi, err}
		}()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	refused := map[string]error{}
	serving := 0
	for range ins {
		b := <-ready
		if b.err != nil {
			refused[ins[b.i].Key] = b.err
			if ctx.Err() == nil {
				h.log.Error(fmt.Sprintf("instance %s refused: %v", ins[b.i].Key, b.err), "instance", ins[b.i].Key)
			}
			continue
		}
		serving++
		wg.Go(func() { runInstances(ctx, []*hostedInstance{b.hi}, h.log) })
	}
	if serving == 0 && ctx.Err() == nil {
		return fmt.Errorf("no instance of server.broker.instances can serve: %s", refusalList(ins, refused))
	}
	return nil
}

func (h *instanceHost) prepareOne(ctx context.Context, in config.Instance, target api.RuntimeTarget, conn *config.BrokerConnection, ports [2]int) (*hostedInstance, error) {
	if conn == nil {
		return nil, fmt.Errorf("no saved credentials for Hub %s: run scion runtime-broker register --instance %s", h.hub, in.Key)
	}
	if !target.Complete() {
		return nil, h.noContextErr()
	}
	if err := registeredTarget(conn, target); err != nil {
		return nil, err
	}
	defaults, err := agentDefaults(in.AgentDefaults)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(h.dataDir, "instances", in.Key)
	ir, err := h.runtime(ctx, h, in, target, conn.BrokerID, dir)
	if err != nil {
		return nil, err
	}
	self, _ := os.Executable()
	var jobs broker.JobsConfig
	if h.fleet != nil {
		jobs = brokerJobs(h.fleet, nil, nil, "")
		if target.Type == api.RuntimeTargetKubernetes {
			jobs.Ambient, jobs.AmbientNamespace = ambientCluster(h.settings, target.Context, target.Namespace, h.log.With("instance", in.Key))
		}
	}
	var agentCA string
	hc, err := hubHTTPClient(conn, h.hub)
	if err == nil {
		agentCA, err = agentHubCA(conn, dir)
	}
	if err != nil {
		_ = ir.rt.Close()
		return nil, fmt.Errorf("instance %s: %w", in.Key, err)
	}
	b, err := broker.New(broker.Config{
		Jobs: jobs, HTTPClient: hc, SharedDirs: h.sharedDirs, AgentHubCA: agentCA,
		HubEndpoint: h.hub, BrokerID: conn.BrokerID, Name: cmp.Or(conn.BrokerName, in.Name), Secret: []byte(conn.Secret),
		Runtime: ir.rt, DataDir: dir, Version: h.version, Logger: h.log,
		HeartbeatInterval: h.heartbeat, Grace: h.grace, ScionBinary: self, PortRange: ports,
		AgentHubEndpoint: cmp.Or(h.settings.Server.Broker.AgentHubEndpoint, ir.agentHub),
		Capabilities:     passthroughCapabilities(h.settings.Server.Broker.AllowPassthrough),
		GitWorkspaces:    h.gitWorkspaces,
		DefaultImage:     ir.defaultImage,
		RuntimeTarget:    &target, InstanceKey: in.Key, AgentDefaults: defaults,
	})
	if err != nil {
		_ = ir.rt.Close()
		return nil, err
	}
	return &hostedInstance{key: in.Key, brokerID: conn.BrokerID, target: target, b: b, rt: ir.rt}, nil
}

// noContextErr says why a Kubernetes instance without runtime_target.context
// has none: the kubeconfig names no current context, or it cannot be read
// (read again here for its error: parseInstances resolves every target
// first, and one instance's unreadable kubeconfig does not refuse the
// start of the others).
func (h *instanceHost) noContextErr() error {
	k, err := h.settings.Server.Broker.Kubernetes()
	if err == nil {
		_, err = kubernetes.CurrentContext(k.Kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("runtime_target.context is unset, and %v: set runtime_target.context", err)
	}
	return errors.New("the kubeconfig names no current context: set runtime_target.context")
}

// instanceRuntimeFor builds the instances' runtimes (a test's fake
// stands in for a real Docker daemon).
var instanceRuntimeFor = newInstanceRuntime

// newInstanceRuntime builds the runtime of an instance on its target and
// checks that the target answers: the Docker daemon a ping, the cluster's
// API server within clusterCheckTimeout.
func newInstanceRuntime(ctx context.Context, h *instanceHost, in config.Instance, target api.RuntimeTarget, brokerID, _ string) (instanceRuntime, error) {
	switch target.Type {
	case api.RuntimeTargetDocker:
		if !dockerAnswers(ctx) {
			return instanceRuntime{}, errors.New("the Docker daemon does not answer a ping (DOCKER_HOST, else the default socket)")
		}
		env, err := h.docker(ctx)
		if err != nil {
			return instanceRuntime{}, err
		}
		self, err := scionBinary()
		if err != nil {
			return instanceRuntime{}, err
		}
		rt, err := docker.New(docker.Options{BrokerID: brokerID, ScionBinary: self, Network: env.network})
		if err != nil {
			return instanceRuntime{}, fmt.Errorf("docker runtime: %w", err)
		}
		return instanceRuntime{rt: rt, agentHub: env.agentHub, defaultImage: env.defaultImage}, nil
	case api.RuntimeTargetKubernetes:
		opts, err := instanceKubernetesOptions(h.settings.Server.Broker, in, target, brokerID)
		if err != nil {
			return instanceRuntime{}, err
		}
		rt, err := kubernetes.New(opts)
		if err != nil {
			return instanceRuntime{}, err
		}
		return instanceRuntime{rt: rt}, nil
	}
	return instanceRuntime{}, fmt.Errorf("runtime_target.type %s: use docker or kubernetes", api.Quote(target.Type))
}

// instanceKubernetesOptions are a Kubernetes instance's runtime options:
// its runtime_target's settings take the place a profile had (the one
// profile, under the instance's key, that every agent gets), so an
// agent's own setting still wins over them and an unset one falls back
// to server.broker.kubernetes.defaults. The context and namespace are the
// resolved target's. An agent may not name another context or namespace
// (its pin is this target); the ServiceAccounts it may name are the
// broker's list.
func instanceKubernetesOptions(bs config.BrokerSettings, in config.Instance, target api.RuntimeTarget, brokerID string) (kubernetes.Options, error) {
	k, err := bs.Kubernetes()
	if err != nil {
		return kubernetes.Options{}, err
	}
	defaults, err := kubernetes.ParseSettings(k.Defaults)
	if err != nil {
		return kubernetes.Options{}, fmt.Errorf("server.broker.kubernetes.defaults: %w", err)
	}
	ts, err := kubernetes.ParseSettings(in.RuntimeTarget.KubernetesSettings())
	if err != nil {
		return kubernetes.Options{}, fmt.Errorf("runtime_target: %w", err)
	}
	ts.Context, ts.Namespace = target.Context, target.Namespace
	return kubernetes.Options{BrokerID: brokerID, Kubeconfig: k.Kubeconfig, Defaults: defaults,
		Profiles: map[string]kubernetes.Settings{in.Key: ts}, DefaultProfile: in.Key,
		ScionImage: k.ScionImage, ImageVolume: k.ImageVolume,
		AgentChoices: kubernetes.AgentChoices{ServiceAccounts: k.AgentServiceAccounts},
		CheckTimeout: clusterCheckTimeout}, nil
}

// docker makes, once for all the process's Docker instances, the agents'
// network (with the forwarder to a loopback Hub) and the demo image.
func (h *instanceHost) docker(ctx context.Context) (dockerEnv, error) {
	h.dockerOnce.Do(func() {
		h.dockerEnv.network, h.dockerEnv.agentHub, h.dockerEnvErr = agentNetwork(ctx, h.hub, h.log)
		if h.dockerEnvErr != nil {
			return
		}
		img, err := ensureDemoImage(ctx, h.log)
		if err != nil {
			h.log.Warn("the demo image could not be built; agents without an image are refused until the Hub has a default image (scion hub settings set --default-image)", "err", err)
		}
		h.dockerEnv.defaultImage = img
	})
	return h.dockerEnv, h.dockerEnvErr
}

// runInstances serves the hosted instances until ctx ends, then closes their
// runtimes.
func runInstances(ctx context.Context, hosted []*hostedInstance, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, hi := range hosted {
		log.Info("flat instance starting", "instance", hi.key, "broker_id", hi.brokerID, "target", hi.target.String())
		wg.Go(func() {
			defer hi.rt.Close()
			_ = hi.b.Run(ctx)
		})
	}
	wg.Wait()
}

// registeredTarget refuses an instance whose target now resolves to
// another than the one it registered serving: its entry's runtime_target
// was edited, or (without a context) the kubeconfig's current context
// changed. Serving the new one would silently strand the instance's
// pinned agents (each refused 409 runtime_target_mismatch) and run new
// ones on a cluster the operator never chose for this key. Credentials
// saved before the target was recorded are not checked.
func registeredTarget(conn *config.BrokerConnection, now api.RuntimeTarget) error {
	if conn.RuntimeTarget == nil {
		return nil
	}
	was := api.RuntimeTarget(*conn.RuntimeTarget)
	if was == now {
		return nil
	}
	return fmt.Errorf("it registered serving %s but its runtime_target now resolves to %s: restore the entry's runtime_target (or, without a context, the kubeconfig's current context), or add an entry with a new key for the new target and register that",
		was, now)
}
