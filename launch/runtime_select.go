package launch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/runtime/process"
)

// runtimeChoice is what newRuntime needs to build a broker's runtime.
type runtimeChoice struct {
	Kind        string // docker, kubernetes, process, fake; "" picks docker when an engine answers, else process
	BrokerID    string
	DataDir     string
	HubEndpoint string
}

// newRuntime builds the runtime a broker drives and says which it chose.
// agentHub, when not empty, is the Hub address agents must use instead of
// the broker's own (a loopback Hub seen from a container).
func newRuntime(ctx context.Context, c runtimeChoice, log *slog.Logger) (rt runtime.Runtime, agentHub string, err error) {
	kind := c.Kind
	if kind == "" {
		kind = "process"
		if dockerAnswers(ctx) {
			kind = "docker"
		}
	}
	switch kind {
	case "docker":
		self, err := scionBinary()
		if err != nil {
			return nil, "", err
		}
		network, agentHub, err := agentNetwork(ctx, c.HubEndpoint, log)
		if err != nil {
			return nil, "", err
		}
		rt, err := docker.New(docker.Options{BrokerID: c.BrokerID, ScionBinary: self, Network: network})
		if err != nil {
			return nil, "", fmt.Errorf("docker runtime: %w", err)
		}
		log.Info("using the docker runtime", "network", networkName(network), "agents_reach_hub_at", cmpNetwork(agentHub))
		return rt, agentHub, nil
	case "process":
		log.Info("using the process runtime: agents run as unsandboxed local processes (no Docker Engine answered)")
		rt, err := process.New(filepath.Join(c.DataDir, "process"))
		return rt, "", err
	case "kubernetes":
		// Agents reach the Hub at its own address: a pod cannot use the
		// broker's loopback, so a Kubernetes broker's Hub must be
		// reachable from the cluster.
		rt, err := newKubernetesRuntime(c.BrokerID, log)
		if err != nil {
			return nil, "", fmt.Errorf("kubernetes runtime: %w", err)
		}
		return rt, "", nil
	case "fake":
		return fake.New(), "", nil
	}
	return nil, "", usageErrorf("unknown runtime %q: use docker, kubernetes, process or fake", c.Kind)
}

// networkName names the agents' network in the log: agentNetwork's
// answer is the network's ID.
func networkName(id string) string {
	if id == "" {
		return cmpNetwork(id)
	}
	return fmt.Sprintf("%s (%.12s)", docker.AgentNetwork, id)
}

func cmpNetwork(n string) string {
	if n == "" {
		return "default bridge"
	}
	return n
}

// dockerAnswers reports whether a Docker Engine (or Podman's API) answers
// at DOCKER_HOST or the default socket within a second.
func dockerAnswers(ctx context.Context) bool {
	cl, err := docker.NewClient("")
	if err != nil {
		return false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = cl.Ping(ctx)
	return err == nil
}

// agentNetwork picks the agents' network. A Hub on loopback (the
// workstation, or a broker beside its Hub) cannot be reached from a
// container, so agents go on a bridge network the broker creates, and the
// broker forwards that network's gateway address to the Hub; published
// ports then work as on any bridge. Any other Hub address is reached
// through the engine's default bridge.
func agentNetwork(ctx context.Context, hubEndpoint string, log *slog.Logger) (network, agentHub string, err error) {
	u, err := url.Parse(hubEndpoint)
	if err != nil {
		return "", "", err
	}
	ip := net.ParseIP(u.Hostname())
	if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", "", nil
	}
	cl, err := docker.NewClient("")
	if err != nil {
		return "", "", err
	}
	defer cl.Close()
	// By its ID: another broker starting at once on an older engine may
	// make a second network of the name (see EnsureNetwork).
	id, gw, err := docker.EnsureNetwork(ctx, cl, docker.AgentNetwork)
	if err != nil {
		return "", "", err
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	target := net.JoinHostPort(u.Hostname(), port)
	// The Hub's own port on the gateway keeps the address agents were
	// given stable across broker restarts; any free port if it is taken.
	addr, err := forwardToHub(context.WithoutCancel(ctx), net.JoinHostPort(gw, port), target, log)
	if err != nil {
		log.Warn("hub forwarder: the Hub's port is taken on the agent network; using another", "err", err)
		if addr, err = forwardToHub(context.WithoutCancel(ctx), net.JoinHostPort(gw, "0"), target, log); err != nil {
			return "", "", fmt.Errorf("forward the agent network to the hub: %w", err)
		}
	}
	return id, u.Scheme + "://" + addr, nil
}

// scionBinary is this executable's path, mounted read-only into agents so
// they can run `scion start`. It must be a static binary.
func scionBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(self)
}

// ensureDemoImage builds the demo image when it is missing, so that the
// workstation's Docker runtime has an image to run with no registry.
func ensureDemoImage(ctx context.Context, log *slog.Logger) (string, error) {
	cl, err := docker.NewClient("")
	if err != nil {
		return "", err
	}
	defer cl.Close()
	if _, err := cl.ImageInspect(ctx, docker.DemoImage); err == nil {
		return docker.DemoImage, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", err
	}
	self, err := scionBinary()
	if err != nil {
		return "", err
	}
	log.Info("building the demo agent image", "image", docker.DemoImage)
	return docker.BuildDemoImage(ctx, cl, self)
}

// BuildDemoImage builds the demo agent image from this (static) binary
// through the Docker Engine API (`scion image build-demo`) and returns its
// tag and the binary's path.
func BuildDemoImage(ctx context.Context) (tag, binary string, err error) {
	self, err := scionBinary()
	if err != nil {
		return "", "", err
	}
	cl, err := docker.NewClient("")
	if err != nil {
		return "", "", err
	}
	defer cl.Close()
	tag, err = docker.BuildDemoImage(ctx, cl, self)
	if err != nil {
		return "", "", fmt.Errorf("build the demo image: %w", err)
	}
	return tag, self, nil
}
