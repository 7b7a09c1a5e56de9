package broker

// Flat Runtime Broker instances (multi-broker spec, "Flat Runtime Brokers
// (experimental)"). A Broker whose Config.RuntimeTarget is set serves that
// one target with a stable identity: its hello reports the target and no
// profiles, it refuses a command pinned to another broker or target (the
// Hub checks first; this is defence in depth, so that a forged or stale
// record never puts an agent on the wrong cluster), it refuses a profile
// named in a create, and it applies the instance's agent_defaults where a
// profile's settings sat.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// AgentDefaults are a flat instance's agent_defaults that this broker
// applies. Each sits where the matching profile setting sat, so the
// request and the agent's own configuration keep winning.
type AgentDefaults struct {
	// Memory and CPUs are resource limits ("512m", "1.5"), the labels a
	// profile's memory and cpus settings gave.
	Memory, CPUs string
	// ImageRegistry prefixes a harness's default image that names no
	// registry host ("scion-claude:latest" -> "<registry>/scion-claude:latest").
	// An image the create names (the request's, or the Hub's Agent
	// Defaults) is used as it is.
	ImageRegistry string
	// RequiredSecrets are the Hub secrets every agent of the instance
	// must be created with; a create lacking one is refused (400).
	RequiredSecrets []string
	// CloneDepth is the git clone --depth of clone-per-agent workspaces
	// when GitWorkspaces.CloneDepth sets none.
	CloneDepth int
	// Harness are harness_overrides, by harness name ("" is generic):
	// each set field wins over the instance-wide one for that harness's
	// agents.
	Harness map[string]HarnessDefaults
}

// HarnessDefaults are one harness's overrides: its default image (in
// place of the harness's built-in one, with ImageRegistry applied the
// same way) and its resource limits.
type HarnessDefaults struct {
	Image        string
	Memory, CPUs string
}

// labels are the resource labels of an agent of harness h: its
// override's, else the instance's.
func (d AgentDefaults) labels(h string) map[string]string {
	o := d.Harness[cmp.Or(h, "generic")]
	out := map[string]string{}
	for k, v := range map[string]string{"memory": cmp.Or(o.Memory, d.Memory), "cpus": cmp.Or(o.CPUs, d.CPUs)} {
		if v != "" {
			out[profileLabelKeys[k]] = v
		}
	}
	return out
}

// image is the default image of an agent of harness h whose create names
// none: the override's, else builtin, with the registry prefix.
func (d AgentDefaults) image(h, builtin string) string {
	return withRegistry(d.ImageRegistry, cmp.Or(d.Harness[cmp.Or(h, "generic")].Image, builtin))
}

// flatErr checks the flat-instance settings of cfg (called by New).
func (cfg Config) flatErr() error {
	if cfg.RuntimeTarget == nil {
		d := cfg.AgentDefaults
		if d.Memory != "" || d.CPUs != "" || d.ImageRegistry != "" || len(d.RequiredSecrets) > 0 || d.CloneDepth != 0 || len(d.Harness) > 0 || cfg.InstanceKey != "" {
			return errors.New("broker: AgentDefaults and InstanceKey are for a flat instance (RuntimeTarget)")
		}
		return nil
	}
	switch {
	case !cfg.RuntimeTarget.Complete():
		return fmt.Errorf("broker: runtime target %s is incomplete (a kubernetes target needs its context and namespace resolved)", cfg.RuntimeTarget)
	case len(cfg.Profiles) > 0:
		return errors.New("broker: a flat instance (RuntimeTarget) offers no profiles")
	case cfg.AgentDefaults.CloneDepth < 0:
		return fmt.Errorf("broker: clone depth %d is negative", cfg.AgentDefaults.CloneDepth)
	}
	return nil
}

// checkPin decides whether a command for an agent pinned to pin may run
// on the broker brokerID serving own (nil: not a flat instance). An
// unpinned command passes: the Hub pins every agent it places on a flat
// broker, and a regular broker's agents have no pin. A pin naming another
// broker, or another target than this one's, or any pin on a broker that
// serves no single target, is 409 runtime_target_mismatch.
func checkPin(pin *api.PinnedRuntimeTarget, brokerID string, own *api.RuntimeTarget) error {
	switch {
	case pin == nil:
		return nil
	case own == nil:
		return api.Conflict(api.CodeTargetMismatch, "the agent is pinned to runtime target %s on runtime broker %s, but runtime broker %s serves no single runtime target",
			pin.RuntimeTarget, pin.BrokerID, brokerID)
	case pin.BrokerID != brokerID:
		return api.Conflict(api.CodeTargetMismatch, "the agent is pinned to runtime broker %s, not to this one (%s)", pin.BrokerID, brokerID)
	case pin.RuntimeTarget != *own:
		return api.Conflict(api.CodeTargetMismatch, "the agent is pinned to runtime target %s, but runtime broker %s serves %s",
			pin.RuntimeTarget, brokerID, own)
	}
	return nil
}

// checkFlatSpec refuses a create naming a profile on a flat instance (it
// has none), or lacking one of the instance's required secrets.
func checkFlatSpec(spec wire.AgentSpec, brokerName string, own *api.RuntimeTarget, d AgentDefaults) error {
	if own == nil {
		return nil
	}
	if spec.Profile != "" {
		return api.Conflict(api.CodeProfileNotAvailable, "runtime broker %s is a flat instance serving %s and offers no profiles; create the agent without profile %s",
			api.Quote(brokerName), own, api.Quote(spec.Profile))
	}
	for _, name := range d.RequiredSecrets {
		if _, ok := spec.Secrets[name]; !ok {
			return api.BadRequest("runtime broker %s requires secret %s for its agents: store it with `scion hub secret set %s` and pass --secret %s to scion start",
				api.Quote(brokerName), name, name, name).WithDetail("secret", name)
		}
	}
	return nil
}

// pinned guards an agent command: a pinned body is checked against this
// broker before anything else runs (and before a keyed command's answer
// is recorded, so a refusal leaves no trace and nothing reaches the
// runtime).
func (b *Broker) pinned(h wire.Handler) wire.Handler {
	return func(ctx context.Context, req *wire.Request) (any, error) {
		// Both bodies carry the pin under the same name; a create's
		// profile and secrets are checked with it.
		var body struct {
			Pin *api.PinnedRuntimeTarget `json:"pinnedRuntimeTarget"`
		}
		if err := req.Decode(&body); err != nil {
			return nil, api.BadRequest("%s: %v", req.Method, err)
		}
		if err := checkPin(body.Pin, b.cfg.BrokerID, b.cfg.RuntimeTarget); err != nil {
			return nil, err
		}
		if req.Method == wire.MethodAgentCreate && b.cfg.RuntimeTarget != nil {
			var spec wire.AgentSpec
			if err := req.Decode(&spec); err != nil {
				return nil, api.BadRequest("%s: %v", req.Method, err)
			}
			if err := checkFlatSpec(spec, b.cfg.Name, b.cfg.RuntimeTarget, b.cfg.AgentDefaults); err != nil {
				return nil, err
			}
		}
		return h(ctx, req)
	}
}

// withRegistry prefixes image with registry when the image names no
// registry host: its first path element has no "." or ":", is not
// "localhost" and has no capitals (Docker's own rule for telling a host
// from a user name: a path element is lower-case, so "MyHost/x" names a
// host, and prefixing it would make an invalid reference).
func withRegistry(registry, image string) string {
	registry = strings.TrimRight(registry, "/")
	if registry == "" || image == "" {
		return image
	}
	if first, _, ok := strings.Cut(image, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first) {
		return image
	}
	return registry + "/" + image
}

// refusal is the Hub's refusal of this broker's channel or hello that a
// retry soon will not change: bad credentials (401), a broker the Hub
// does not let in (403), one it no longer knows (404), or a conflict such
// as experiment_disabled (409). nil for anything else (a network failure,
// a timeout, a Hub restarting).
func refusal(err error) *api.Error {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return nil
	}
	switch ae.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict:
		return ae
	}
	return nil
}
