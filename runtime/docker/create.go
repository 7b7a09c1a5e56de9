package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/scion-go/scion/runtime"
)

// Paths inside an agent's container.
const (
	WorkspacePath   = "/workspace"
	HomePath        = "/home/agent"
	ScionBinaryPath = "/usr/local/bin/scion"
)

// Create implements runtime.Runtime. It creates the container without
// starting it; an agent that already has one is an error, and so is an
// image the engine does not have (nothing is pulled, nothing is left).
// spec.BrokerID, when set, must be the runtime's.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return runtime.Status{}, err
	}
	if !validID(spec.AgentID) {
		return runtime.Status{}, fmt.Errorf("docker runtime: Create: invalid agent ID %q", spec.AgentID)
	}
	switch spec.BrokerID {
	case "":
		spec.BrokerID = r.opts.BrokerID
	case r.opts.BrokerID:
	default:
		return runtime.Status{}, fmt.Errorf("docker runtime: Create %s: spec is for broker %q, this runtime is broker %q",
			spec.AgentID, spec.BrokerID, r.opts.BrokerID)
	}
	if spec.Image == "" {
		return runtime.Status{}, fmt.Errorf("docker runtime: Create %s: no image", spec.AgentID)
	}
	for _, dir := range []*string{&spec.WorkDir, &spec.HomeDir} {
		if err := bindSource(dir); err != nil {
			return runtime.Status{}, fmt.Errorf("docker runtime: Create %s: %w", spec.AgentID, err)
		}
	}
	if err := r.setPath(ctx, &spec); err != nil {
		return runtime.Status{}, wrapErr("Create", spec.AgentID, err)
	}
	labels := runtime.SpecLabels(spec)
	cfg, host, err := r.containerConfig(spec, labels)
	if err != nil {
		return runtime.Status{}, fmt.Errorf("docker runtime: Create %s: %w", spec.AgentID, err)
	}
	unlock, err := r.locks.Lock(ctx, spec.AgentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	// The name (a function of broker and agent) makes the engine refuse a
	// racing duplicate from another Runtime; this check gives the common
	// case a clear message, and catches a duplicate under another slug.
	if cs, err := r.list(ctx, spec.AgentID); err != nil {
		return runtime.Status{}, wrapErr("Create", spec.AgentID, err)
	} else if len(cs) > 0 {
		return runtime.Status{}, fmt.Errorf("docker runtime: Create: agent %q already exists (container %s)", spec.AgentID, shortID(cs[0].ID))
	}
	created, err := prepareDirs(spec)
	if err != nil {
		return runtime.Status{}, fmt.Errorf("docker runtime: Create %s: %w", spec.AgentID, err)
	}
	name := containerName(r.opts.BrokerID, spec.Slug, spec.AgentID)
	resp, err := r.cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		// Nothing left behind: no container, and no directory we made.
		for _, d := range created {
			os.RemoveAll(d)
		}
	}
	switch {
	case cerrdefs.IsNotFound(err) && r.imageMissing(ctx, spec.Image):
		// There is no registry to pull from: say what to do instead.
		return runtime.Status{}, &ImageNotAvailableError{Image: spec.Image, Err: err}
	case cerrdefs.IsConflict(err):
		return runtime.Status{}, fmt.Errorf("docker runtime: Create: agent %q already exists (container name %s is taken): %w", spec.AgentID, name, err)
	case err != nil:
		return runtime.Status{}, fmt.Errorf("docker runtime: Create %s: %w", spec.AgentID, err)
	}
	r.remember(spec.AgentID, refFromLabels(resp.ID, labels))
	// Built from what we sent rather than inspected: a created container
	// has nothing more to tell, and Create is on the agent start path.
	return runtime.Status{AgentID: spec.AgentID, RunID: spec.RunID, State: runtime.StateCreated, Labels: labels}, nil
}

// setPath gives an agent with the scion binary mounted the image's PATH
// (or the spec's, if it names one) with the binary's directory added. A
// container's Env replaces the image's variable of the same name, so
// setting PATH at all means reading the image's first. Without the binary
// PATH is left to the image. An image the engine lacks is Create's
// ImageNotAvailableError a moment later, not this one's.
func (r *Runtime) setPath(ctx context.Context, spec *runtime.Spec) error {
	if r.opts.ScionBinary == "" {
		return nil
	}
	p, ok := spec.Env["PATH"]
	if !ok {
		img, err := r.cli.ImageInspect(ctx, spec.Image)
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		var env []string
		if img.Config != nil {
			env = img.Config.Env
		}
		p = imagePath(env)
	}
	spec.Env = maps.Clone(spec.Env)
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	spec.Env["PATH"] = runtime.PathWith(p, path.Dir(ScionBinaryPath))
	return nil
}

// imagePath is the PATH an image's configured environment gives its
// containers: its own, or the engine's default when it sets none.
func imagePath(env []string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			return v
		}
	}
	return runtime.DefaultPath
}

// imageMissing tells whether a 404 on create was about the image rather
// than, say, the network: engines word it differently (Docker "No such
// image", Podman "image not known"), so ask.
func (r *Runtime) imageMissing(ctx context.Context, image string) bool {
	_, err := r.cli.ImageInspect(ctx, image)
	return cerrdefs.IsNotFound(err)
}

// ImageNotAvailableError is Create's error for an image the engine does
// not have.
type ImageNotAvailableError struct {
	Image string
	Err   error // the engine's answer
}

func (e *ImageNotAvailableError) Error() string {
	return fmt.Sprintf("image %s is not available on this broker (no registry: build or load it first)", e.Image)
}

func (e *ImageNotAvailableError) Unwrap() error { return e.Err }

// containerConfig translates spec into the engine's container and host
// configurations.
func (r *Runtime) containerConfig(spec runtime.Spec, labels map[string]string) (*container.Config, *container.HostConfig, error) {
	ports, err := ParsePorts(labels[LabelPorts])
	if err != nil {
		return nil, nil, err
	}
	res, err := r.resources(labels)
	if err != nil {
		return nil, nil, err
	}
	cfg := &container.Config{
		Image:      spec.Image,
		Env:        agentEnv(spec),
		Labels:     labels,
		WorkingDir: WorkspacePath,
		User:       r.opts.User,
		Tty:        labels[LabelTTY] == "true",
		OpenStdin:  true, // kept open for Attach, like docker run -i
	}
	if len(spec.Command) > 0 {
		cfg.Cmd = slices.Clone(spec.Command)
		// Non-nil and empty: the engine then ignores the image's
		// entrypoint instead of prefixing it to Command.
		cfg.Entrypoint = []string{}
	}
	init := !r.opts.DisableInit
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(r.opts.Network),
		Init:        &init,
		Resources:   res,
	}
	if spec.WorkDir != "" {
		host.Binds = append(host.Binds, spec.WorkDir+":"+WorkspacePath)
	}
	if spec.HomeDir != "" {
		host.Binds = append(host.Binds, spec.HomeDir+":"+HomePath)
	}
	if r.opts.ScionBinary != "" {
		host.Binds = append(host.Binds, r.opts.ScionBinary+":"+ScionBinaryPath+":ro")
	}
	for _, m := range spec.Mounts {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) || strings.Contains(m.Source+m.Target, ":") {
			return nil, nil, fmt.Errorf("mount %q -> %q: both must be absolute paths without colons", m.Source, m.Target)
		}
		b := m.Source + ":" + m.Target
		if m.ReadOnly {
			b += ":ro"
		}
		host.Binds = append(host.Binds, b)
	}
	if len(ports) > 0 {
		cfg.ExposedPorts, host.PortBindings = portMaps(ports, r.opts.PortBindAddress)
	}
	return cfg, host, nil
}

// agentEnv is the container's environment: spec.Env, with HOME the mounted
// home whatever Env says. Sorted, so that the same spec makes the same
// container.
func agentEnv(spec runtime.Spec) []string {
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	if spec.HomeDir != "" {
		env["HOME"] = HomePath
	}
	return envList(env)
}

// bindSource makes *dir, if set, usable as a bind mount source: absolute
// (the engine reads a relative source as a volume name) and free of the
// colon that separates the fields of a bind.
func bindSource(dir *string) error {
	if *dir == "" {
		return nil
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if strings.Contains(abs, ":") {
		return fmt.Errorf("directory %q contains a colon, which a bind mount cannot carry", abs)
	}
	*dir = abs
	return nil
}

// prepareDirs creates the mounted directories that are missing (the
// engine would create them too, but owned by root and world-readable) and
// returns the topmost directory it created for each, for undoing.
func prepareDirs(spec runtime.Spec) (created []string, err error) {
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{spec.WorkDir, 0o750}, {spec.HomeDir, 0o700}} {
		if d.path == "" {
			continue
		}
		top := topMissing(d.path)
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			for _, c := range created {
				os.RemoveAll(c)
			}
			return nil, err
		}
		if top != "" {
			created = append(created, top)
		}
	}
	return created, nil
}

// topMissing returns the outermost ancestor of dir (or dir itself) that
// does not exist, or "" if dir exists.
func topMissing(dir string) string {
	top := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			return top
		}
		top = d
		if filepath.Dir(d) == d {
			return top
		}
	}
}

// containerName is scion-<slug>-<first 8 of agent ID>-<10 hex>. The hash
// covers broker and agent ID: agent IDs are UUIDv7, whose leading digits
// are a timestamp that agents created in the same minute share, and two
// brokers on one engine may hold the same agent (during a move). So the
// name is fixed for a (broker, agent) and practically unique otherwise.
func containerName(brokerID, slug, agentID string) string {
	sum := sha256.Sum256([]byte(brokerID + "\x00" + agentID))
	parts := []string{"scion"}
	if s := sanitize(slug, 24); s != "" {
		parts = append(parts, s)
	}
	if s := sanitize(agentID, 8); s != "" {
		parts = append(parts, s)
	}
	parts = append(parts, hex.EncodeToString(sum[:5]))
	return strings.Join(parts, "-")
}

// sanitize keeps the characters a container name allows, at most n.
func sanitize(s string, n int) string {
	var b strings.Builder
	for _, c := range s {
		if b.Len() == n {
			break
		}
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-_.")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// errNotRunning is wrapped by the errors of operations that need a
// running agent.
var errNotRunning = errors.New("agent is not running")

// engineTime parses one of the engine's timestamps; the engine reports
// "never" as the zero time 0001-01-01T00:00:00Z, which parses to zero.
func engineTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
