package kubernetes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/keylock"
	"github.com/scion-go/scion/runtime"
)

// Options configures a Runtime.
type Options struct {
	// BrokerID is recorded as scion.broker_id on everything the runtime
	// creates and scopes every lookup. Required.
	BrokerID string
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster account (a broker in a pod).
	Kubeconfig string
	// Config, if set, is the client config of every target instead of
	// the kubeconfig's contexts (tests, and embedders with their own).
	Config *rest.Config
	// Defaults are the broker-wide settings (the global layer of Resolve).
	Defaults Settings
	// Profiles are the broker's Kubernetes profiles (or a flat instance's
	// runtime_target under its instance key): each names a context and
	// namespace and the pod settings its agents default to. An agent picks
	// one with the scion.profile label; without it, DefaultProfile.
	Profiles       map[string]Settings
	DefaultProfile string
	// AgentChoices are the contexts, namespaces and ServiceAccounts an
	// agent's own settings may name besides its profile's (see
	// checkAgentPlacement).
	AgentChoices AgentChoices
	// StopGrace is the grace period of a Stop called with grace 0, and
	// every pod's terminationGracePeriodSeconds (10s).
	StopGrace time.Duration
	// ScionImage is an image holding the static scion binary at
	// /usr/local/bin/scion (the demo image is one), made available
	// read-only at that path in every agent.
	// Empty adds nothing. ImageVolume mounts it as an image volume instead
	// of copying it with an init container.
	ScionImage  string
	ImageVolume bool
	// CheckTimeout bounds New's check that each target's API server
	// answers (15s). A flat instance's is shorter: an unreachable
	// cluster is refused at start while the other instances serve.
	CheckTimeout time.Duration
}

// Runtime runs agents as pods. See the package documentation.
type Runtime struct {
	opts  Options
	locks keylock.Locks

	events chan runtime.Event
	stop   context.CancelFunc
	wctx   context.Context
	wg     sync.WaitGroup // watchers

	mu      sync.Mutex
	closed  bool
	targets map[targetKey]*target // by context and namespace
	where   map[string]*target    // agent ID -> its target, a cache
	ours    map[types.UID]bool    // pods the runtime itself deleted: not news
	gone    map[string]bool       // agents Delete removed: no more events
	last    map[string]string     // agent ID -> last state sent on events
}

var (
	_ runtime.Runtime     = (*Runtime)(nil)
	_ runtime.Execer      = (*Runtime)(nil)
	_ runtime.SpecChecker = (*Runtime)(nil)
)

// ErrClosed is returned by the methods of a closed Runtime.
var ErrClosed = errors.New("kubernetes runtime: closed")

// eventBuffer is how many events an unread Events channel holds before
// further ones are dropped: events are a hint, Inventory is the truth.
const eventBuffer = 1024

// target is one (context, namespace) the runtime puts agents in.
type target struct {
	key    targetKey
	client kubernetes.Interface
	config *rest.Config
}

type targetKey struct{ context, namespace string }

// New returns a runtime for opts.BrokerID. It builds a client for every
// profile's context and namespace (and the defaults'), checks that each
// answers, and starts watching their pods.
func New(opts Options) (*Runtime, error) {
	if opts.BrokerID == "" {
		return nil, errors.New("kubernetes runtime: Options.BrokerID is required")
	}
	if err := checkIdentity(runtime.Spec{AgentID: "x", BrokerID: opts.BrokerID}); err != nil {
		return nil, err
	}
	opts.StopGrace = cmp.Or(opts.StopGrace, 10*time.Second)
	wctx, stop := context.WithCancel(context.Background())
	r := &Runtime{
		opts:    opts,
		events:  make(chan runtime.Event, eventBuffer),
		stop:    stop,
		wctx:    wctx,
		targets: map[targetKey]*target{},
		where:   map[string]*target{},
		ours:    map[types.UID]bool{},
		gone:    map[string]bool{},
		last:    map[string]string{},
	}
	// The profiles' targets, or with none the defaults'. Another target
	// (an agent's own namespace, say) is made when an agent names it.
	var layers []Settings
	for _, p := range opts.Profiles {
		layers = append(layers, Resolve(p, opts.Defaults))
	}
	if len(layers) == 0 {
		layers = append(layers, opts.Defaults)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(opts.CheckTimeout, 15*time.Second))
	defer cancel()
	for _, s := range layers {
		t, err := r.target(s)
		if err != nil {
			r.Close()
			return nil, err
		}
		// Fail now, naming the server, rather than at the first agent.
		if _, err := t.client.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx); err != nil {
			r.Close()
			return nil, fmt.Errorf("kubernetes runtime: API server %s (context %q) does not answer: %w", t.config.Host, t.key.context, err)
		}
	}
	return r, nil
}

// target returns (making it on first use) the target that settings s
// name, and starts watching its pods.
func (r *Runtime) target(s Settings) (*target, error) {
	key := targetKey{s.Context, cmp.Or(s.Namespace, DefaultNamespace)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if t := r.targets[key]; t != nil {
		return t, nil
	}
	cfg, err := r.restConfig(key.context)
	if err != nil {
		return nil, err
	}
	cl, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: context %q: %w", key.context, err)
	}
	t := &target{key: key, client: cl, config: cfg}
	r.targets[key] = t
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.watch(r.wctx, t)
	}()
	return t, nil
}

// restConfig is the client config of a kubeconfig context ("" is the
// kubeconfig's current one, or the in-cluster account).
func (r *Runtime) restConfig(kubeContext string) (*rest.Config, error) {
	cfg, err := r.loadConfig(kubeContext)
	if err != nil {
		return nil, err
	}
	// client-go's default of 5 requests a second (burst 10) would make a
	// broker starting twenty agents at once wait on itself; the API
	// server's own priority and fairness is the limit that matters.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 100, 200
	}
	return cfg, nil
}

func (r *Runtime) loadConfig(kubeContext string) (*rest.Config, error) {
	if r.opts.Config != nil {
		return rest.CopyConfig(r.opts.Config), nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if r.opts.Kubeconfig != "" {
		rules.ExplicitPath = r.opts.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: context %q: %w", kubeContext, err)
	}
	return cfg, nil
}

// allTargets returns the targets known now.
func (r *Runtime) allTargets() []*target {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*target, 0, len(r.targets))
	for _, t := range r.targets {
		out = append(out, t)
	}
	return out
}

// settingsFor resolves an agent's settings: its own, its profile's (or
// the default profile's), the broker's defaults.
func (r *Runtime) settingsFor(spec runtime.Spec) (Settings, error) {
	own, err := agentSettings(spec.Labels)
	if err != nil {
		// The caller's own settings are wrong: a refusal, not a failure.
		return Settings{}, api.BadRequest("%s", err.Error()).WithDetail("field", "kubernetes")
	}
	name := cmp.Or(spec.Labels[LabelProfile], r.opts.DefaultProfile)
	profile, ok := r.opts.Profiles[name]
	if !ok && name != "" && spec.Labels[LabelProfile] != "" && len(r.opts.Profiles) > 0 {
		return Settings{}, fmt.Errorf("kubernetes runtime: no Kubernetes profile %q on this broker", name)
	}
	if err := checkAgentPlacement(own, Resolve(profile, r.opts.Defaults), r.opts.AgentChoices); err != nil {
		return Settings{}, err
	}
	return Resolve(own, profile, r.opts.Defaults), nil
}

// CheckSpec implements runtime.SpecChecker: an agent's own settings that
// do not parse, or that name a context, namespace, ServiceAccount or NFS
// volume it may not choose, are refused before the broker prepares a
// workspace for it.
func (r *Runtime) CheckSpec(spec runtime.Spec) error {
	_, err := r.settingsFor(spec)
	return err
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return "kubernetes" }

// Events implements runtime.Runtime: the agents' state changes as the
// pod watches see them (scheduled, running, exited with the exit code),
// and exited when a pod is deleted by someone else. When the buffer is
// full further events are dropped.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// Close implements runtime.Runtime. It stops the watches and closes the
// Events channel; the pods keep running, to be adopted by the next
// Runtime of this broker.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.stop()
	r.wg.Wait()
	r.mu.Lock()
	close(r.events)
	r.mu.Unlock()
	return nil
}

func (r *Runtime) checkOpen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return nil
}

// emit sends an event unless the runtime is closed, nobody reads, or the
// agent's state (or a pending agent's reason) has not changed since the
// last one.
func (r *Runtime) emit(st runtime.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	key := st.State
	if st.ExitCode != nil {
		key += fmt.Sprint(*st.ExitCode)
	}
	if st.State == runtime.StatePending {
		// Why it is pending is the news: scheduled at last, then its
		// image failing to pull, is what the Hub must show.
		key += "\x00" + st.Message
	}
	if r.last[st.AgentID] == key {
		return
	}
	r.last[st.AgentID] = key
	select {
	case r.events <- runtime.Event{Status: st}:
	default:
	}
}

func notFound(agentID string) error {
	return fmt.Errorf("kubernetes runtime: agent %q: %w", agentID, runtime.ErrNotFound)
}

// CurrentContext is the current context of the kubeconfig (kubeconfig,
// or with "" $KUBECONFIG then ~/.kube/config): the context an unset
// context setting means. "" when the kubeconfig names none, or there is
// no kubeconfig (a broker in a pod uses its in-cluster account).
func CurrentContext(kubeconfig string) (string, error) {
	c, err := config.KubeCurrentContext(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("kubernetes: kubeconfig: %w", err)
	}
	return c, nil
}
