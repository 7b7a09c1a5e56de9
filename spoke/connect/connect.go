package connect

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/spoke/tunnel"
)

// Secrets reads the value of the broker-scoped Hub secret name. Its
// errors are passed through (wrapped, so that an *api.Error such as
// secret_not_found stays visible to errors.As); they must not hold the
// value.
type Secrets func(ctx context.Context, name string) (string, error)

// Ambient names the broker's own cluster and its tier.
const (
	AmbientCluster = fleet.AmbientName
	TierAmbient    = fleet.Tier("ambient")
)

// DefaultNamespace is a spoke's namespace when neither the cluster block
// nor the kubeconfig's context names one.
const DefaultNamespace = "default"

// Spoke is one cluster, ready for the Job runner.
type Spoke struct {
	// Cluster is the fleet block (nil for the ambient cluster).
	Cluster *fleet.Cluster
	Tier    fleet.Tier
	// Namespace is where Jobs go: the block's namespace, else the
	// kubeconfig context's, else "default".
	Namespace string
	Config    *rest.Config
	Clients   jobs.Clients
	// Warnings are worth a log line (a bound, expiring token).
	Warnings []string
}

// Name is the spoke's cluster name ("ambient" for the broker's own).
func (s *Spoke) Name() string {
	if s.Cluster == nil {
		return AmbientCluster
	}
	return s.Cluster.Name
}

// Pool opens spokes and keeps the bastion clusters' tunnels.
type Pool struct {
	o   fleet.Options
	log *slog.Logger

	mu      sync.Mutex
	closed  bool
	tunnels map[string]*held // by slot: see tunnelSlot
}

// held is a cluster's current tunnel and the hash of what made it.
type held struct {
	key string
	t   *tunnel.Tunnel
}

// NewPool is an empty pool; o bounds every client it builds (its Dialer
// is ignored: the pool supplies the bastion tier's).
func NewPool(o fleet.Options, log *slog.Logger) *Pool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o.Dialer = nil
	return &Pool{o: o, log: log, tunnels: map[string]*held{}}
}

// errClosed is Open after Close.
var errClosed = errors.New("spoke pool closed")

// Open fetches c's secrets and builds its client for c's tier. Every
// error names the cluster, with URLs' userinfo redacted; a Secrets error
// is wrapped, not replaced.
func (p *Pool) Open(ctx context.Context, c *fleet.Cluster, secrets Secrets) (*Spoke, error) {
	s, err := p.open(ctx, c, secrets)
	return s, api.RedactError(err)
}

func (p *Pool) open(ctx context.Context, c *fleet.Cluster, secrets Secrets) (*Spoke, error) {
	kc, err := secrets(ctx, c.KubeconfigSecret)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: kubeconfig secret %s: %w", c.Name, c.KubeconfigSecret, err)
	}
	o := p.o
	if c.Tier() == fleet.TierBastion {
		key, err := secrets(ctx, c.Bastion.KeySecret)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: bastion key secret %s: %w", c.Name, c.Bastion.KeySecret, err)
		}
		if err := p.ensureTunnel(c, []byte(key)); err != nil {
			return nil, err
		}
		o.Dialer = &poolDialer{p: p, cluster: c.Name, slot: tunnelSlot(c)}
	}
	cfg, warnings, err := fleet.RESTConfig(c, []byte(kc), o)
	if err != nil {
		return nil, err
	}
	ns := c.Namespace
	if ns == "" {
		ns = contextNamespace([]byte(kc))
	}
	s, err := newSpoke(c, c.Tier(), ns, cfg)
	if err != nil {
		return nil, err
	}
	s.Warnings = warnings
	return s, nil
}

// Ambient is the broker's own cluster (its Kubernetes runtime's config),
// cluster "ambient", tier "ambient", in namespace ("default" when empty).
// Its requests are bounded by the pool's request timeout (the runtime's
// config sets none, and a Job's status is polled for as long as it
// waits in its queue: one silent answer would hold its follow for ever).
func (p *Pool) Ambient(cfg *rest.Config, namespace string) (*Spoke, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if cfg != nil && cfg.Timeout <= 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = cmp.Or(p.o.RequestTimeout, fleet.DefaultRequestTimeout)
	}
	return newSpoke(nil, TierAmbient, namespace, cfg)
}

func newSpoke(c *fleet.Cluster, tier fleet.Tier, ns string, cfg *rest.Config) (*Spoke, error) {
	name := AmbientCluster
	if c != nil {
		name = c.Name
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: kubernetes client: %w", name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: dynamic client: %w", name, err)
	}
	return &Spoke{Cluster: c, Tier: tier, Namespace: ns, Config: cfg,
		Clients: jobs.Clients{Kube: kube, Dynamic: dyn}}, nil
}

// contextNamespace is the namespace of the kubeconfig's current context,
// or DefaultNamespace. RESTConfig has already refused a kubeconfig that
// does not load, so a failure here only means "none named".
func contextNamespace(kc []byte) string {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return DefaultNamespace
	}
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok && ctx.Namespace != "" {
		return ctx.Namespace
	}
	return DefaultNamespace
}

// tunnelKey hashes everything a tunnel is made of: a change of any of
// them (a rotated key, a new known_hosts line, another bastion) must not
// reuse the old connection. The hash keeps the key out of the map.
func tunnelKey(c *fleet.Cluster, key []byte) string {
	h := sha256.New()
	for _, s := range []string{c.Name, c.Bastion.Address(), c.Bastion.User, c.Bastion.KnownHosts,
		c.Options(fleet.Options{}).ConnectTimeout.String(), c.Bastion.KeepaliveInterval.D.String(), fmt.Sprint(c.Bastion.KeepaliveMax)} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil))
}

// tunnelSlot is which bastion a block goes through: its cluster name,
// bastion address, user and key secret's name. A profile may override a
// file block of the same name with another bastion (another spoke), and
// the two must not share, or replace each other's, tunnel. A rotated key
// (the same secret, a new value) or a new known_hosts line is the same
// slot: its tunnel is replaced, and the clients made before follow.
func tunnelSlot(c *fleet.Cluster) string {
	return fmt.Sprintf("%d:%s\x00%s\x00%s\x00%s", len(c.Name), c.Name, c.Bastion.Address(), c.Bastion.User, c.Bastion.KeySecret)
}

// ensureTunnel makes c's tunnel the one for these settings and key,
// replacing (and closing) one made of others. New does not connect: the
// first dial does, bounded by its request's context.
func (p *Pool) ensureTunnel(c *fleet.Cluster, key []byte) error {
	k, slot := tunnelKey(c, key), tunnelSlot(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("cluster %s: %w", c.Name, errClosed)
	}
	old := p.tunnels[slot]
	if old != nil && old.key == k {
		return nil
	}
	t, err := tunnel.New(tunnel.Config{Host: c.Bastion.Address(), User: c.Bastion.User,
		PrivateKey: key, KnownHosts: c.Bastion.KnownHosts, ConnectTimeout: c.Options(p.o).ConnectTimeout,
		KeepaliveInterval: c.Bastion.KeepaliveInterval.D, KeepaliveMax: c.Bastion.KeepaliveMax})
	if err != nil {
		return fmt.Errorf("cluster %s: bastion %s: %w", c.Name, c.Bastion.Address(), err)
	}
	p.tunnels[slot] = &held{key: k, t: t}
	if old != nil {
		p.log.Info("spoke: bastion settings or key changed; new tunnel", "cluster", c.Name, "bastion", c.Bastion.Address())
		// Connections on the old tunnel die with it; their clients redial
		// through the new one (poolDialer).
		old.t.Close()
	}
	return nil
}

// Tunnels is how many bastion tunnels the pool holds.
func (p *Pool) Tunnels() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tunnels)
}

// Close closes every tunnel; Open fails after it.
func (p *Pool) Close() {
	p.mu.Lock()
	ts := p.tunnels
	p.tunnels, p.closed = map[string]*held{}, true
	p.mu.Unlock()
	for _, h := range ts {
		h.t.Close()
	}
}

// poolDialer dials through the cluster's current tunnel, so that a client
// built before a key rotation (a Job followed for hours) carries on over
// the new tunnel instead of a closed one. The old tunnel is closed at once
// (a rotated key or host key may be compromised), so a request on a pooled
// connection that died with it fails typed, and the runner's retry redials.
type poolDialer struct {
	p       *Pool
	cluster string // for errors
	slot    string
}

func (d *poolDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.p.mu.Lock()
	h := d.p.tunnels[d.slot]
	closed := d.p.closed
	d.p.mu.Unlock()
	if closed || h == nil {
		return nil, fmt.Errorf("cluster %s: %w", d.cluster, errClosed)
	}
	return h.t.DialContext(ctx, network, addr)
}
