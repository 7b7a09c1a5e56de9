package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/scion-go/scion/internal/keylock"
	"github.com/scion-go/scion/runtime"
)

// Options configures a Runtime.
type Options struct {
	// Host is the engine's address, such as unix:///var/run/docker.sock
	// or unix:///run/user/1000/podman/podman.sock. Empty means the
	// DOCKER_HOST environment variable, else the default socket.
	Host string
	// Client, if set, is used instead of dialling Host; Close leaves it
	// open. It should negotiate the API version (see NewClient).
	Client *client.Client
	// BrokerID is the broker's ID, recorded as scion.broker_id on every
	// container and used to scope every lookup. Required.
	BrokerID string
	// Network is the engine network agents join (NetworkMode); empty means
	// the engine's default bridge.
	Network string
	// StopGrace is the grace period of a Stop called with grace 0 (10s).
	StopGrace time.Duration
	// ScionBinary is the host path of the static scion binary, mounted
	// read-only at /usr/local/bin/scion in every agent. Empty mounts
	// nothing.
	ScionBinary string
	// Resources are every agent's default limits; zero means unlimited.
	Resources Resources
	// User runs agents as this user ("uid:gid" or a name in the image);
	// empty means the image's user. Files agents write in their workspace
	// belong to this user on the host.
	User string
	// PortBindAddress is the host address published ports listen on
	// (127.0.0.1). Use 0.0.0.0 to expose agents' ports beyond the host.
	PortBindAddress string
	// DisableInit runs the agent's command as PID 1 itself instead of
	// under the engine's init.
	DisableInit bool
	// StartupWait is how long Start watches a freshly started container
	// for an early death, so that a command that cannot run (not found,
	// a bad flag) is Start's error rather than a later exit event. Start
	// returns as soon as the container dies, but a healthy one costs the
	// whole wait, so the default is 0: Start takes one look only, and a
	// death after that is reported by Events and Inspect (with the same
	// message: exit code and last output).
	StartupWait time.Duration
}

// Resources are container resource limits.
type Resources struct {
	// Memory is the memory limit in bytes.
	Memory int64
	// NanoCPUs is the CPU limit in billionths of a CPU (1.5 CPUs is
	// 1_500_000_000).
	NanoCPUs int64
}

// Runtime runs agents as containers of one Docker Engine. See the package
// documentation.
type Runtime struct {
	cli       *client.Client
	ownClient bool
	opts      Options
	locks     keylock.Locks
	events    chan runtime.Event
	stopWatch context.CancelFunc
	wg        sync.WaitGroup // the event watcher

	mu       sync.Mutex // guards closed, sends on events, refs and deleting
	closed   bool
	refs     map[string]containerRef // agent ID -> its container, a cache
	deleting map[string]time.Time    // containers Delete removed, and when

	teardown teardownGate // one stop or remove at a time on an engine that needs it
}

var (
	_ runtime.Runtime  = (*Runtime)(nil)
	_ runtime.Execer   = (*Runtime)(nil)
	_ runtime.Attacher = (*Runtime)(nil)
)

// ErrClosed is returned by the methods of a closed Runtime.
var ErrClosed = errors.New("docker runtime: closed")

// eventBuffer is how many events an unread Events channel holds before
// further ones are dropped: events are a hint, Inventory is the truth.
const eventBuffer = 1024

// NewClient returns an Engine API client for host (empty: the environment,
// then the default socket) that negotiates the API version with the
// engine, so that it works with older engines (API 1.41) and Podman.
func NewClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	return client.NewClientWithOpts(opts...)
}

// New connects to the engine and returns a runtime for opts.BrokerID. It
// fails when the engine does not answer, naming the address it tried.
func New(opts Options) (*Runtime, error) {
	return newRuntime(opts, nil)
}

// newRuntime is New with an injectable event source, for tests of the
// event stream's reconnection.
func newRuntime(opts Options, src eventSource) (*Runtime, error) {
	if opts.BrokerID == "" {
		return nil, errors.New("docker runtime: Options.BrokerID is required")
	}
	opts.StopGrace = cmp.Or(opts.StopGrace, 10*time.Second)
	opts.PortBindAddress = cmp.Or(opts.PortBindAddress, "127.0.0.1")
	if opts.ScionBinary != "" {
		// A bind source must be absolute: a relative one would name a
		// volume instead.
		abs, err := filepath.Abs(opts.ScionBinary)
		if err != nil {
			return nil, fmt.Errorf("docker runtime: scion binary: %w", err)
		}
		opts.ScionBinary = abs
		if fi, err := os.Stat(opts.ScionBinary); err != nil {
			return nil, fmt.Errorf("docker runtime: scion binary: %w", err)
		} else if fi.IsDir() {
			return nil, fmt.Errorf("docker runtime: scion binary %s is a directory", opts.ScionBinary)
		}
	}
	r := &Runtime{
		cli:      opts.Client,
		opts:     opts,
		events:   make(chan runtime.Event, eventBuffer),
		refs:     map[string]containerRef{},
		deleting: map[string]time.Time{},
	}
	if r.cli == nil {
		cli, err := NewClient(opts.Host)
		if err != nil {
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
		r.cli, r.ownClient = cli, true
	}
	// Fail now, with the address, rather than at the first agent: and the
	// ping is where the API version gets negotiated.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.cli.Ping(ctx); err != nil {
		r.closeClient()
		return nil, fmt.Errorf("docker runtime: engine at %s does not answer: %w", r.cli.DaemonHost(), err)
	}
	v, err := r.cli.ServerVersion(ctx)
	if err != nil {
		r.closeClient()
		return nil, fmt.Errorf("docker runtime: engine at %s: version: %w", r.cli.DaemonHost(), err)
	}
	r.teardown = newTeardownGate(serialTeardown(v))
	if src == nil {
		src = r.engineEvents
	}
	wctx, stop := context.WithCancel(context.Background())
	r.stopWatch = stop
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.watch(wctx, src, time.Now())
	}()
	return r, nil
}

// Client returns the runtime's Engine API client, for building images
// (BuildDemoImage) without dialling the engine again.
func (r *Runtime) Client() *client.Client { return r.cli }

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return "docker" }

// Events implements runtime.Runtime: a status for every start, exit
// (whatever the cause, Stop included), pause and unpause of this broker's
// containers, and StateMissing for a container removed other than through
// Delete. When the buffer is full further events are dropped.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// Close implements runtime.Runtime. It stops watching events and closes
// the Events channel; the containers keep running, to be adopted by the
// next Runtime of this broker.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.stopWatch()
	r.wg.Wait()
	r.mu.Lock()
	close(r.events)
	r.mu.Unlock()
	return r.closeClient()
}

func (r *Runtime) closeClient() error {
	if r.ownClient {
		return r.cli.Close()
	}
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

// emit sends an event unless the runtime is closed or nobody reads.
func (r *Runtime) emit(st runtime.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	select {
	case r.events <- runtime.Event{Status: st}:
	default:
	}
}

// containerRef is what the runtime remembers of an agent's container.
type containerRef struct {
	id  string
	tty bool // created with a terminal: logs and attach are not multiplexed
}

func refFromLabels(id string, labels map[string]string) containerRef {
	return containerRef{id: id, tty: labels[LabelTTY] == "true"}
}

// validID reports whether id can be an agent ID here: anything that fits
// in a label value. Other IDs are simply unknown.
func validID(id string) bool {
	return id != "" && len(id) <= 255 && !strings.ContainsFunc(id, func(c rune) bool { return c < ' ' || c == 0x7f })
}

func notFound(agentID string) error {
	return fmt.Errorf("docker runtime: agent %q: %w", agentID, runtime.ErrNotFound)
}

// ownFilter selects this broker's agent containers, plus extra filters.
func (r *Runtime) ownFilter(extra ...filters.KeyValuePair) filters.Args {
	args := append([]filters.KeyValuePair{
		filters.Arg("label", runtime.LabelBrokerID+"="+r.opts.BrokerID),
		filters.Arg("label", runtime.LabelAgentID),
	}, extra...)
	return filters.NewArgs(args...)
}

// list returns this broker's containers of agentID, newest first.
func (r *Runtime) list(ctx context.Context, agentID string) ([]container.Summary, error) {
	cs, err := r.cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: r.ownFilter(filters.Arg("label", runtime.LabelAgentID+"="+agentID)),
	})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return cs, nil
}

// lookup finds the agent's container, from the cache or the engine.
func (r *Runtime) lookup(ctx context.Context, agentID string) (ref containerRef, cached bool, err error) {
	if !validID(agentID) {
		return containerRef{}, false, notFound(agentID)
	}
	r.mu.Lock()
	ref, cached = r.refs[agentID]
	r.mu.Unlock()
	if cached {
		return ref, true, nil
	}
	cs, err := r.list(ctx, agentID)
	if err != nil {
		return containerRef{}, false, err
	}
	if len(cs) == 0 {
		return containerRef{}, false, notFound(agentID)
	}
	// Newest first: should a crash ever leave two, act on the live one.
	ref = refFromLabels(cs[0].ID, cs[0].Labels)
	r.remember(agentID, ref)
	return ref, false, nil
}

func (r *Runtime) remember(agentID string, ref containerRef) {
	r.mu.Lock()
	r.refs[agentID] = ref
	r.mu.Unlock()
}

// forget drops the cache entry of agentID if it still names containerID.
func (r *Runtime) forget(agentID, containerID string) {
	r.mu.Lock()
	if r.refs[agentID].id == containerID {
		delete(r.refs, agentID)
	}
	r.mu.Unlock()
}

// withContainer runs fn on the agent's container. If the engine says the
// container is gone and it came from the cache, the cache was stale (the
// container was removed by hand, or re-created by another Runtime of this
// broker), so the agent is looked up once more before giving up.
func (r *Runtime) withContainer(ctx context.Context, agentID string, fn func(containerRef) error) error {
	if err := r.checkOpen(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		ref, cached, err := r.lookup(ctx, agentID)
		if err != nil {
			return err
		}
		err = fn(ref)
		if !cerrdefs.IsNotFound(err) {
			return err
		}
		r.forget(agentID, ref.id)
		if !cached || attempt > 0 {
			return notFound(agentID)
		}
	}
}
