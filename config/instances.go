package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/scion-go/scion/api"
)

// Flat Runtime Broker instances (multi-broker spec, "Flat Runtime Brokers
// (experimental)"): server.broker.instances lists the flat instances a
// broker process hosts instead of a regular broker, each serving exactly
// one runtime target under its own broker ID.
//
//	server:
//	  broker:
//	    instances:
//	      - key: local-docker          # immutable: it names the instance's credentials
//	        name: local-docker         # the broker name it registers under
//	        runtime_target: {type: docker}
//	        maxAgents: 10              # optional; 0 unlimited, unset inherits the Hub's default
//	      - key: k8s-batch
//	        name: k8s-batch
//	        runtime_target:
//	          type: kubernetes
//	          context: batch-cluster   # default: the kubeconfig's current context
//	          namespace: agents        # default: default
//	          shared_dir_size: 40Gi
//	          safe_to_evict: false
//	        agent_defaults:
//	          image_registry: registry.example.com/agents
//	          resources: {memory: 4Gi, cpus: "2"}
//
// settings.yaml keeps the list as written (InstanceList holds its YAML),
// so that loading the file never fails on an entry: the commands that
// host or register instances call Parse, which refuses a bad entry with
// an error naming the entry and the field.

// Instance is one entry of server.broker.instances.
type Instance struct {
	// Key is the instance's local, immutable identity: its credentials
	// are saved under it (BrokerConnection.Instance). Renaming the key
	// makes another instance.
	Key string `yaml:"key"`
	// Name is the broker name the instance registers under.
	Name          string                `yaml:"name"`
	RuntimeTarget RuntimeTargetSettings `yaml:"runtime_target"`
	AgentDefaults AgentDefaults         `yaml:"agent_defaults,omitempty"`
	// MaxAgents is the instance's own cap (the broker setting maxAgents,
	// applied per broker ID): 0 unlimited, nil inherits the Hub's default.
	MaxAgents *int `yaml:"maxAgents,omitempty"`
}

// RuntimeTargetSettings is an instance's runtime_target: the target and,
// for Kubernetes, the defaults a profile supplied to a regular broker.
// The keys are those of runtime/kubernetes's settings (KubernetesSettings
// gives them as such a map).
type RuntimeTargetSettings struct {
	// Type is TargetDocker or TargetKubernetes.
	Type string `yaml:"type"`
	// Context is the kubeconfig context ("" the current one) and
	// Namespace the agents' namespace ("" default).
	Context          string `yaml:"context,omitempty"`
	Namespace        string `yaml:"namespace,omitempty"`
	SharedDirSize    string `yaml:"shared_dir_size,omitempty"`
	SharedDirClass   string `yaml:"shared_dir_class,omitempty"`
	SafeToEvict      *bool  `yaml:"safe_to_evict,omitempty"`
	PriorityClass    string `yaml:"priority_class,omitempty"`
	GKEMode          *bool  `yaml:"gke_mode,omitempty"`
	SharedDirStorage string `yaml:"shared_dir_storage,omitempty"`
	HomeStorage      string `yaml:"home_storage,omitempty"`
}

// AgentDefaults is an instance's agent_defaults: what a profile supplied
// to the agents of a regular broker. Each sits where the matching profile
// setting sat (templates, the agent's configuration and the request keep
// winning).
type AgentDefaults struct {
	// ImageRegistry prefixes harness images named without a registry.
	ImageRegistry string `yaml:"image_registry,omitempty"`
	// HarnessConfig is the default harness configuration's name.
	HarnessConfig string        `yaml:"harness_config,omitempty"`
	Volumes       []VolumeMount `yaml:"volumes,omitempty"`
	Resources     *Resources    `yaml:"resources,omitempty"`
	// HarnessOverrides are per-harness defaults, by harness name.
	HarnessOverrides map[string]HarnessOverride `yaml:"harness_overrides,omitempty"`
	// RequiredSecrets name secrets an agent must have to start here.
	RequiredSecrets []string `yaml:"required_secrets,omitempty"`
	// CloneDepth is the history depth of the agents' clones (0 full).
	CloneDepth *int `yaml:"clone_depth,omitempty"`
}

// VolumeMount mounts a host path (Docker) or volume into the agents.
type VolumeMount struct {
	Source   string `yaml:"source"`
	Target   string `yaml:"target"`
	ReadOnly bool   `yaml:"read_only,omitempty"`
}

// Resources are the agents' memory and CPU limits, as Kubernetes
// quantities ("4Gi", "1.5", "500m").
type Resources struct {
	Memory string `yaml:"memory,omitempty"`
	CPUs   string `yaml:"cpus,omitempty"`
}

// HarnessOverride are the defaults of one harness's agents.
type HarnessOverride struct {
	Image         string     `yaml:"image,omitempty"`
	HarnessConfig string     `yaml:"harness_config,omitempty"`
	Resources     *Resources `yaml:"resources,omitempty"`
}

// Runtime target types (api.RuntimeTargetDocker and
// api.RuntimeTargetKubernetes: config imports nothing of ours, and a test
// checks they agree).
const (
	TargetDocker     = "docker"
	TargetKubernetes = "kubernetes"
)

// RuntimeTarget is api.RuntimeTarget's shape (config imports nothing of
// ours): convert with api.RuntimeTarget(t).
type RuntimeTarget struct {
	Type      string
	Context   string
	Namespace string
}

// String is api.RuntimeTarget.String: "docker" or
// "kubernetes:<context>/<namespace>".
func (t RuntimeTarget) String() string {
	if t.Type != TargetKubernetes {
		return t.Type
	}
	return t.Type + ":" + t.Context + "/" + t.Namespace
}

// Target is the target as configured: a Kubernetes context or namespace
// left unset stays empty (ResolveTarget fills them).
func (t RuntimeTargetSettings) Target() RuntimeTarget {
	return RuntimeTarget{Type: t.Type, Context: t.Context, Namespace: t.Namespace}
}

// ResolveTarget is the target the instance reports: for Kubernetes, an
// unset context is currentContext (the kubeconfig's current context) and
// an unset namespace is "default".
func (t RuntimeTargetSettings) ResolveTarget(currentContext string) RuntimeTarget {
	r := t.Target()
	if r.Type == TargetKubernetes {
		if r.Context == "" {
			r.Context = currentContext
		}
		if r.Namespace == "" {
			r.Namespace = defaultNamespace
		}
	}
	return r
}

// defaultNamespace is runtime/kubernetes's DefaultNamespace.
const defaultNamespace = "default"

// KubernetesSettings are the runtime_target's Kubernetes settings as a
// runtime/kubernetes settings map (ParseSettings), the keys that are set.
func (t RuntimeTargetSettings) KubernetesSettings() map[string]string {
	m := map[string]string{}
	for k, v := range t.kubernetesFields() {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// kubernetesFields are the Kubernetes-only fields by key, "" when unset.
func (t RuntimeTargetSettings) kubernetesFields() map[string]string {
	b := func(p *bool) string {
		if p == nil {
			return ""
		}
		return strconv.FormatBool(*p)
	}
	return map[string]string{
		"context": t.Context, "namespace": t.Namespace,
		"shared_dir_size": t.SharedDirSize, "shared_dir_class": t.SharedDirClass,
		"safe_to_evict": b(t.SafeToEvict), "priority_class": t.PriorityClass, "gke_mode": b(t.GKEMode),
		"shared_dir_storage": t.SharedDirStorage, "home_storage": t.HomeStorage,
	}
}

// InstanceList is server.broker.instances as written in settings.yaml.
type InstanceList struct{ node *yaml.Node }

// UnmarshalYAML keeps the list's YAML; Parse reads it.
func (l *InstanceList) UnmarshalYAML(n *yaml.Node) error {
	l.node = n
	return nil
}

// MarshalYAML writes the list back as it was read.
func (l InstanceList) MarshalYAML() (any, error) { return l.node, nil }

// IsZero reports an absent list (omitted on save).
func (l InstanceList) IsZero() bool { return l.node == nil }

// Configured reports whether settings.yaml has server.broker.instances
// (an empty list counts: it still means "no regular broker").
func (l InstanceList) Configured() bool {
	return l.node != nil && !(l.node.Kind == yaml.ScalarNode && l.node.Tag == "!!null")
}

// Parse decodes and validates the instances: every refusal names the
// entry and the field (see ParseInstances).
func (l InstanceList) Parse() ([]Instance, error) {
	if !l.Configured() {
		return nil, nil
	}
	return ParseInstances(l.node)
}

// Instance returns the entry with key, or an error listing the keys.
func FindInstance(instances []Instance, key string) (*Instance, error) {
	keys := make([]string, len(instances))
	for i := range instances {
		if instances[i].Key == key {
			return &instances[i], nil
		}
		keys[i] = instances[i].Key
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no instance %q: server.broker.instances is empty or not set in %s", key, SettingsPath())
	}
	return nil, fmt.Errorf("no instance %q in server.broker.instances; the keys are: %s", key, strings.Join(keys, ", "))
}

// instancesPath is the settings path of the list, for messages.
const instancesPath = "server.broker.instances"

// entryLabel names entry i for a message: its index, and its key when it
// has a usable one.
func entryLabel(i int, key string) string {
	if key == "" {
		return fmt.Sprintf("%s[%d]", instancesPath, i)
	}
	return fmt.Sprintf("%s[%d] (key %s)", instancesPath, i, api.Quote(key))
}

// ParseInstances decodes the YAML of server.broker.instances and
// validates it (ValidateInstances). It first checks the shape that
// decoding alone would accept or report without naming the entry: a
// mapping key given twice, unknown fields (with the nearest known one),
// and a runtime_target that is not one mapping.
func ParseInstances(n *yaml.Node) ([]Instance, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s (line %d): a list of instances is expected", instancesPath, n.Line)
	}
	out := make([]Instance, len(n.Content))
	for i, e := range n.Content {
		if e.Kind == yaml.AliasNode && e.Alias != nil {
			e = e.Alias
		}
		label := entryLabel(i, scalarField(e, "key"))
		if e.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s (line %d): an instance is a mapping with key, name and runtime_target", label, e.Line)
		}
		if rt := field(e, "runtime_target"); rt != nil && rt.Kind == yaml.SequenceNode {
			return nil, fmt.Errorf("%s: runtime_target: give exactly one runtime target (a mapping with type), not a list", label)
		}
		if err := checkShape(e, reflect.TypeFor[Instance](), ""); err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		if err := e.Decode(&out[i]); err != nil {
			// yaml's "yaml: unmarshal errors:\n  line 7: cannot ...": keep the
			// lines, each after the entry's label.
			msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:")
			return nil, fmt.Errorf("%s: %s", label, strings.Join(strings.Fields(msg), " "))
		}
	}
	if err := ValidateInstances(out); err != nil {
		return nil, err
	}
	return out, nil
}

// field is the value of key in mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// scalarField is the scalar value of key in mapping n, or "".
func scalarField(n *yaml.Node, key string) string {
	if v := field(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// checkShape refuses, in node n decoding into type t, a mapping key
// given twice and a key t does not read. path is n's field path within
// the entry ("" for the entry itself).
func checkShape(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // a type error, which decoding reports
		}
		known := knownKeys(t)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if line, ok := seen[k.Value]; ok {
				return fmt.Errorf("%s (line %d): given twice (first at line %d)", join(path, k.Value), k.Line, line)
			}
			seen[k.Value] = k.Line
			ft, ok := known[k.Value]
			if !ok {
				if near, d := nearest(k.Value, known); d <= maxTypo(k.Value) {
					return fmt.Errorf("%s (line %d): unknown field; did you mean %s?", join(path, k.Value), k.Line, near)
				}
				return fmt.Errorf("%s (line %d): unknown field; known fields here: %s", join(path, k.Value), k.Line, strings.Join(sortedKeys(known), ", "))
			}
			if err := checkShape(v, ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range n.Content {
			if err := checkShape(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if line, ok := seen[k.Value]; ok {
				return fmt.Errorf("%s (line %d): given twice (first at line %d)", join(path, k.Value), k.Line, line)
			}
			seen[k.Value] = k.Line
			if err := checkShape(v, t.Elem(), join(path, k.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}
