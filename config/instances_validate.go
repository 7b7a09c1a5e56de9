package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scion-go/scion/api"
)

// ValidateInstances checks decoded server.broker.instances entries: a
// valid, unique key and name, exactly one known runtime target with only
// its type's fields, one instance per target (two instances on one
// target would be two identities for it, and pins could not tell them
// apart), a maxAgents of at least 0, and agent_defaults that can be
// applied. The error names the entry (its index and key) and the field,
// e.g. `server.broker.instances[1] (key "k8s-batch"): runtime_target.type
// "podman": use docker or kubernetes`. It reads nothing but its argument.
//
// Targets are compared as configured (an unset namespace is "default"):
// two Kubernetes entries of which only one names the current context are
// told apart only once the context is known (ResolveTargets).
func ValidateInstances(instances []Instance) error {
	keys, names := map[string]int{}, map[string]int{}
	targets := map[RuntimeTarget]int{}
	for i, in := range instances {
		label := entryLabel(i, in.Key)
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s: %s", label, fmt.Sprintf(format, args...))
		}
		if err := checkInstanceName("key", in.Key); err != nil {
			return fail("%v", err)
		}
		if err := checkInstanceName("name", in.Name); err != nil {
			return fail("%v", err)
		}
		if j, ok := keys[in.Key]; ok {
			return fail("key %s: already the key of %s; each instance needs its own key", api.Quote(in.Key), entryLabel(j, in.Key))
		}
		keys[in.Key] = i
		if j, ok := names[in.Name]; ok {
			return fail("name %s: already the name of %s; each instance registers under its own name", api.Quote(in.Name), entryLabel(j, instances[j].Key))
		}
		names[in.Name] = i
		if err := validateRuntimeTarget(in.RuntimeTarget); err != nil {
			return fail("%v", err)
		}
		t := in.RuntimeTarget.ResolveTarget("")
		if j, ok := targets[t]; ok {
			return fail("runtime_target: %s is already served by %s; keep one instance per runtime target", describeTarget(in.RuntimeTarget), entryLabel(j, instances[j].Key))
		}
		targets[t] = i
		if in.MaxAgents != nil && *in.MaxAgents < 0 {
			return fail("maxAgents %d: use 0 (unlimited) or more, or leave it unset to inherit the Hub's default", *in.MaxAgents)
		}
		if err := validateAgentDefaults(in.AgentDefaults); err != nil {
			return fail("agent_defaults.%v", err)
		}
	}
	return nil
}

// ResolveTargets are the instances' targets as they report them, an
// unset Kubernetes context being currentContext; two instances that
// resolve to one target are refused as in ValidateInstances.
func ResolveTargets(instances []Instance, currentContext string) ([]RuntimeTarget, error) {
	out := make([]RuntimeTarget, len(instances))
	seen := map[RuntimeTarget]int{}
	for i, in := range instances {
		out[i] = in.RuntimeTarget.ResolveTarget(currentContext)
		if j, ok := seen[out[i]]; ok {
			return nil, fmt.Errorf("%s: runtime_target: %s is already served by %s; keep one instance per runtime target",
				entryLabel(i, in.Key), out[i].String(), entryLabel(j, instances[j].Key))
		}
		seen[out[i]] = i
	}
	return out, nil
}

func describeTarget(t RuntimeTargetSettings) string {
	r := t.ResolveTarget("")
	if r.Type == TargetKubernetes && r.Context == "" {
		return r.Type + ":(current context)/" + r.Namespace
	}
	return r.String()
}

func checkInstanceName(fieldName, v string) error {
	if v == "" {
		return fmt.Errorf("%s: missing", fieldName)
	}
	if !api.ValidName(v) {
		return fmt.Errorf("%s %s: use 1-%d lower-case letters, digits and '-', starting and ending with a letter or digit, and not shaped like an ID",
			fieldName, api.Quote(v), api.MaxNameLen)
	}
	return nil
}

func validateRuntimeTarget(t RuntimeTargetSettings) error {
	switch t.Type {
	case "":
		return fmt.Errorf("runtime_target.type: missing: use docker or kubernetes")
	case TargetDocker:
		for _, k := range sortedFieldKeys(t.kubernetesFields()) {
			if t.kubernetesFields()[k] != "" {
				return fmt.Errorf("runtime_target.%s: a kubernetes field, but runtime_target.type is docker (one entry serves one target: give each target its own entry)", k)
			}
		}
		return nil
	case TargetKubernetes:
	default:
		return fmt.Errorf("runtime_target.type %s: use docker or kubernetes", api.Quote(t.Type))
	}
	if t.Context != "" && strings.TrimSpace(t.Context) != t.Context {
		return fmt.Errorf("runtime_target.context %s: no leading or trailing spaces", api.Quote(t.Context))
	}
	if t.Namespace != "" {
		if errs := validation.IsDNS1123Label(t.Namespace); len(errs) > 0 {
			return fmt.Errorf("runtime_target.namespace %s: not a Kubernetes namespace name: %s", api.Quote(t.Namespace), errs[0])
		}
	}
	if t.SharedDirSize != "" {
		q, err := resource.ParseQuantity(t.SharedDirSize)
		if err != nil {
			return fmt.Errorf("runtime_target.shared_dir_size %s: not a quantity like 10Gi", api.Quote(t.SharedDirSize))
		}
		// "-40Gi" and "0" parse, but the claim the size is for would be
		// refused by the API server only at the first agent's start.
		if q.Sign() <= 0 {
			return fmt.Errorf("runtime_target.shared_dir_size %s: a positive quantity like 10Gi is expected", api.Quote(t.SharedDirSize))
		}
	}
	// Object names (DNS subdomains), which the API server would refuse
	// only at the first agent's pod or claim. Surrounding spaces are
	// runtime/kubernetes's to trim, as for a profile's settings.
	for _, f := range []struct{ key, v, kind string }{
		{"priority_class", t.PriorityClass, "PriorityClass"}, {"shared_dir_class", t.SharedDirClass, "StorageClass"},
	} {
		if strings.TrimSpace(f.v) == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(strings.TrimSpace(f.v)); len(errs) > 0 {
			return fmt.Errorf("runtime_target.%s %s: not a Kubernetes %s name: %s", f.key, api.Quote(f.v), f.kind, errs[0])
		}
	}
	switch t.SharedDirStorage {
	case "", "pvc", "nfs":
	default:
		return fmt.Errorf("runtime_target.shared_dir_storage %s: use pvc or nfs", api.Quote(t.SharedDirStorage))
	}
	switch t.HomeStorage {
	case "", "emptydir", "pvc", "nfs":
	default:
		return fmt.Errorf("runtime_target.home_storage %s: use emptydir, pvc or nfs", api.Quote(t.HomeStorage))
	}
	return nil
}

func sortedFieldKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// validateAgentDefaults checks agent_defaults; its error starts with the
// field's path under agent_defaults.
func validateAgentDefaults(d AgentDefaults) error {
	if r := d.ImageRegistry; r != "" {
		if strings.Contains(r, "://") || strings.ContainsAny(r, " \t\n") || strings.HasSuffix(r, "/") {
			return fmt.Errorf("image_registry %s: give a registry and optional path like registry.example.com/agents (no scheme, spaces or trailing /)", api.Quote(r))
		}
		// An image reference's host may have capitals, its path may not:
		// the runtime would refuse every image under it at the pull.
		if i := strings.Index(r, "/"); i >= 0 && strings.ToLower(r[i:]) != r[i:] {
			return fmt.Errorf("image_registry %s: an image's path is lower-case (only the registry host may have capitals)", api.Quote(r))
		}
	}
	if strings.TrimSpace(d.HarnessConfig) != d.HarnessConfig {
		return fmt.Errorf("harness_config %s: no leading or trailing spaces", api.Quote(d.HarnessConfig))
	}
	for i, v := range d.Volumes {
		switch {
		case v.Source == "":
			return fmt.Errorf("volumes[%d].source: missing", i)
		case v.Target == "":
			return fmt.Errorf("volumes[%d].target: missing", i)
		case !path.IsAbs(v.Target):
			return fmt.Errorf("volumes[%d].target %s: an absolute path in the agent is expected", i, api.Quote(v.Target))
		}
		for j := range i {
			if path.Clean(d.Volumes[j].Target) == path.Clean(v.Target) {
				return fmt.Errorf("volumes[%d].target %s: already the target of volumes[%d]", i, api.Quote(v.Target), j)
			}
		}
	}
	if err := validateResources("resources", d.Resources); err != nil {
		return err
	}
	for _, h := range sortedOverrideKeys(d.HarnessOverrides) {
		if !slices.Contains(api.Harnesses, h) {
			return fmt.Errorf("harness_overrides.%s: unknown harness: use one of %v", h, api.Harnesses)
		}
		if err := validateResources("harness_overrides."+h+".resources", d.HarnessOverrides[h].Resources); err != nil {
			return err
		}
	}
	for i, s := range d.RequiredSecrets {
		if !api.ValidSecretName(s) {
			return fmt.Errorf("required_secrets[%d] %s: a Hub secret name is letters, digits and _ (an environment variable name), not starting with a digit", i, api.Quote(s))
		}
		if j := slices.Index(d.RequiredSecrets[:i], s); j >= 0 {
			return fmt.Errorf("required_secrets[%d] %s: already required_secrets[%d]", i, api.Quote(s), j)
		}
	}
	if d.CloneDepth != nil && *d.CloneDepth < 0 {
		return fmt.Errorf("clone_depth %d: use 0 (full history) or more", *d.CloneDepth)
	}
	return nil
}

// minMemory is the least memory an agent can be given: below it the
// quantity parses but no agent could run under it, and the common slip
// is memory "512m", 0.512 bytes as a Kubernetes quantity (512 MiB only as
// Docker reads it), which became a 1-byte limit.
var minMemory = resource.MustParse("1Mi")

func validateResources(fieldPath string, r *Resources) error {
	if r == nil {
		return nil
	}
	for _, f := range []struct{ key, v, example string }{{"memory", r.Memory, "4Gi"}, {"cpus", r.CPUs, "1.5"}} {
		if f.v == "" {
			continue
		}
		q, err := resource.ParseQuantity(f.v)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("%s.%s %s: a positive quantity like %s is expected", fieldPath, f.key, api.Quote(f.v), f.example)
		}
		// The runtimes take CPUs to the millicore, 0.001 to 1024 (the
		// scion.cpus label): outside, every create would be refused.
		if f.key == "cpus" && (q.Cmp(minCPUs) < 0 || q.Cmp(maxCPUs) > 0) {
			return fmt.Errorf("%s.cpus %s: 0.001 (1m) to 1024 CPUs are allowed", fieldPath, api.Quote(f.v))
		}
		if f.key == "memory" && q.Cmp(minMemory) < 0 {
			return fmt.Errorf("%s.memory %s: at least 1Mi is expected (a Kubernetes quantity: 512m is 0.512 bytes, 512 MiB is 512Mi)", fieldPath, api.Quote(f.v))
		}
	}
	return nil
}

// minCPUs and maxCPUs bound the runtimes' scion.cpus label.
var minCPUs, maxCPUs = resource.MustParse("1m"), resource.MustParse("1024")

func sortedOverrideKeys(m map[string]HarnessOverride) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
