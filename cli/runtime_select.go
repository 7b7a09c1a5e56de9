package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/docker/docker/client"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/runtime/process"
)

// runtimeChoice is what newRuntime needs to build a broker's runtime.
type runtimeChoice struct {
	Kind        string // docker, process, fake; "" picks docker when an engine answers, else process
	BrokerID    string
	DataDir     string
	HubEndpoint string
}

// newRuntime builds the runtime a broker drives and says which it chose.
func newRuntime(ctx context.Context, c runtimeChoice, log *slog.Logger) (runtime.Runtime, error) {
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
			return nil, err
		}
		rt, err := docker.New(docker.Options{BrokerID: c.BrokerID, ScionBinary: self, Network: dockerNetwork(c.HubEndpoint)})
		if err != nil {
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
		log.Info("using the docker runtime", "network", cmpNetwork(dockerNetwork(c.HubEndpoint)))
		return rt, nil
	case "process":
		log.Info("using the process runtime: agents run as unsandboxed local processes (no Docker Engine answered)")
		return process.New(filepath.Join(c.DataDir, "process"))
	case "fake":
		return fake.New(), nil
	}
	return nil, usageErrorf("unknown runtime %q: use docker, process or fake", c.Kind)
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

// dockerNetwork picks the agents' network: a Hub on loopback (the
// workstation, or a broker beside its Hub) is only reachable from a
// container that shares the host's network; any other Hub address is
// reached through the engine's default bridge.
func dockerNetwork(hubEndpoint string) string {
	u, err := url.Parse(hubEndpoint)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
		return "host"
	}
	return ""
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
	} else if !client.IsErrNotFound(err) {
		return "", err
	}
	self, err := scionBinary()
	if err != nil {
		return "", err
	}
	log.Info("building the demo agent image", "image", docker.DemoImage)
	return docker.BuildDemoImage(ctx, cl, self)
}
