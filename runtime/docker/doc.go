// Package docker is a runtime.Runtime that runs each agent in a container
// of a Docker Engine, driven through the Engine API (never the docker CLI:
// one API round trip costs about a millisecond, a CLI invocation several).
//
// # Engine
//
// New connects to the engine named by Options.Host, or else by the
// standard environment (DOCKER_HOST, DOCKER_API_VERSION, DOCKER_CERT_PATH,
// DOCKER_TLS_VERIFY), or else to unix:///var/run/docker.sock, and
// negotiates the API version, so engines from API 1.41 (Docker 20.10) on
// work. Podman serves the same API: start its socket and point the broker
// at it,
//
//	systemctl --user start podman.socket
//	DOCKER_HOST=unix:///run/user/$UID/podman/podman.sock scion runtime-broker start ...
//
// (or Options.Host = "unix:///run/user/1000/podman/podman.sock"; rootful
// Podman listens on unix:///run/podman/podman.sock). Rootless engines need
// cgroup v2 for Suspend/Resume and resource limits.
//
// # No registry
//
// The runtime never pulls. An image that is not present on the engine is
// reported as such ("image X is not available on this broker (no
// registry: build or load it first)") and nothing is created. Images are
// built locally from scratch with BuildScratchImage or BuildDemoImage
// (the demo image that `scion image build-demo` builds).
//
// # Containers
//
// An agent's container is named scion-<slug>-<agent ID prefix>-<hash> and
// carries the runtime.SpecLabels of its spec; Inventory, Events and every
// lookup filter on scion.broker_id, so a broker only ever sees and touches
// its own containers even when several brokers share an engine. Nothing is
// kept on the broker's disk: a new Runtime over the same engine (a
// restarted broker) finds its containers by label and adopts them.
//
// Inside the container:
//
//	/workspace            Spec.WorkDir, bind-mounted; the working directory
//	/home/agent           Spec.HomeDir, bind-mounted; HOME
//	/usr/local/bin/scion  Options.ScionBinary, bind-mounted read-only, so
//	                      that an agent can run `scion start` itself
//
// With the binary mounted, PATH is the image's (read from its
// configuration, the engine's default when it sets none) or Spec.Env's,
// with /usr/local/bin appended when it is missing: never the broker's.
//
// Spec.Command replaces the image's entrypoint and command. The engine's
// tiny init (docker-init) runs as PID 1 unless Options.DisableInit, so
// that a stop request reaches the agent's command and zombies are reaped
// even when the command was never written to be PID 1. Standard input is
// kept open (docker run -i) so that Attach can write to it.
//
// # Per-agent options in Spec.Labels
//
// runtime.Spec has no field for ports, terminals or resources, so a spec
// asks for them with labels (which also makes them visible in Inventory,
// for instance to a broker that rebuilds its port pool after a restart):
//
//	scion.ports   "8080:31000,9090/udp:31001" publishes container port
//	              8080/tcp on host port 31000 and 9090/udp on 31001, bound
//	              to Options.PortBindAddress; "8080" or "8080:0" lets the
//	              engine pick the host port. See ParsePorts.
//	scion.tty     "true" runs the command with a terminal (for interactive
//	              harnesses); logs then carry the terminal's \r\n.
//	scion.memory  memory limit, "512m", "2g" or bytes; overrides
//	              Options.Resources.Memory.
//	scion.cpus    CPU limit, "1.5"; overrides Options.Resources.NanoCPUs.
package docker
