package config

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/scion-go/scion/api"
)

// parseDoc reads settings.yaml text as LoadSettings does and parses its
// instances.
func parseDoc(t *testing.T, doc string) ([]Instance, error) {
	t.Helper()
	var s Settings
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatalf("settings do not load: %v", err)
	}
	return s.Server.Broker.Instances.Parse()
}

// instancesDoc is settings.yaml with entries (each already indented as a
// list item under instances).
func instancesDoc(entries string) string {
	return "server:\n  broker:\n    instances:\n" + entries
}

const dockerEntry = "      - key: local-docker\n        name: local-docker\n        runtime_target: {type: docker}\n"

func TestParseInstancesTheSpecExample(t *testing.T) {
	got, err := parseDoc(t, instancesDoc(`      - key: local-docker
        name: local-docker
        runtime_target:
          type: docker
        maxAgents: 0
      - key: k8s-batch
        name: k8s-batch
        runtime_target:
          type: kubernetes
          context: batch-cluster
          namespace: agents
          shared_dir_size: 40Gi
          safe_to_evict: false
        maxAgents: 20
        agent_defaults:
          image_registry: registry.example.com/agents
          harness_config: default
          volumes: [{source: /data, target: /mnt/data, read_only: true}]
          resources: {memory: 4Gi, cpus: "1.5"}
          harness_overrides:
            claude: {image: claude:dev, resources: {memory: 8Gi}}
          required_secrets: [ANTHROPIC_API_KEY]
          clone_depth: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "local-docker" || got[1].Name != "k8s-batch" {
		t.Fatalf("instances = %+v", got)
	}
	if got[0].MaxAgents == nil || *got[0].MaxAgents != 0 || *got[1].MaxAgents != 20 {
		t.Errorf("maxAgents = %v, %v", got[0].MaxAgents, got[1].MaxAgents)
	}
	if tg := api.RuntimeTarget(got[1].RuntimeTarget.Target()); tg != (api.RuntimeTarget{Type: "kubernetes", Context: "batch-cluster", Namespace: "agents"}) {
		t.Errorf("target = %+v", tg)
	}
	wantK8s := map[string]string{"context": "batch-cluster", "namespace": "agents", "shared_dir_size": "40Gi", "safe_to_evict": "false"}
	if m := got[1].RuntimeTarget.KubernetesSettings(); !reflect.DeepEqual(m, wantK8s) {
		t.Errorf("kubernetes settings = %v, want %v", m, wantK8s)
	}
	d := got[1].AgentDefaults
	if d.ImageRegistry != "registry.example.com/agents" || d.Resources.CPUs != "1.5" || d.HarnessOverrides["claude"].Resources.Memory != "8Gi" ||
		!d.Volumes[0].ReadOnly || d.RequiredSecrets[0] != "ANTHROPIC_API_KEY" || *d.CloneDepth != 1 || d.HarnessConfig != "default" {
		t.Errorf("agent_defaults = %+v", d)
	}
}

// Every refusal names the entry (index, and key when it has one) and the
// field.
func TestParseInstancesRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, entries, want string
	}{
		{"missing key", "      - name: a\n        runtime_target: {type: docker}\n",
			`server.broker.instances[0]: key: missing`},
		{"invalid key", "      - key: K8s_Batch\n        name: a\n        runtime_target: {type: docker}\n",
			`server.broker.instances[0] (key "K8s_Batch"): key "K8s_Batch": use 1-63 lower-case letters`},
		{"missing name", "      - key: a\n        runtime_target: {type: docker}\n",
			`server.broker.instances[0] (key "a"): name: missing`},
		{"invalid name", "      - key: a\n        name: my broker\n        runtime_target: {type: docker}\n",
			`server.broker.instances[0] (key "a"): name "my broker": use 1-63`},
		{"duplicate key", dockerEntry + "      - key: local-docker\n        name: other\n        runtime_target: {type: kubernetes}\n",
			`server.broker.instances[1] (key "local-docker"): key "local-docker": already the key of server.broker.instances[0] (key "local-docker")`},
		{"duplicate name", dockerEntry + "      - key: k8s\n        name: local-docker\n        runtime_target: {type: kubernetes}\n",
			`server.broker.instances[1] (key "k8s"): name "local-docker": already the name of server.broker.instances[0] (key "local-docker")`},
		{"runtime_target as a list", "      - key: a\n        name: a\n        runtime_target:\n          - {type: docker}\n          - {type: kubernetes}\n",
			`server.broker.instances[0] (key "a"): runtime_target: give exactly one runtime target (a mapping with type), not a list`},
		{"two targets' fields mixed", "      - key: a\n        name: a\n        runtime_target: {type: docker, namespace: agents}\n",
			`server.broker.instances[0] (key "a"): runtime_target.namespace: a kubernetes field, but runtime_target.type is docker`},
		{"kubernetes-only field on docker", "      - key: a\n        name: a\n        runtime_target: {type: docker, safe_to_evict: false}\n",
			`server.broker.instances[0] (key "a"): runtime_target.safe_to_evict: a kubernetes field, but runtime_target.type is docker`},
		{"type given twice", "      - key: a\n        name: a\n        runtime_target:\n          type: docker\n          type: kubernetes\n",
			`server.broker.instances[0] (key "a"): runtime_target.type (line 8): given twice (first at line 7)`},
		{"key given twice", "      - key: a\n        key: b\n        name: a\n        runtime_target: {type: docker}\n",
			`server.broker.instances[0] (key "a"): key (line 5): given twice (first at line 4)`},
		{"unknown type", dockerEntry + "      - key: k8s-batch\n        name: k8s-batch\n        runtime_target: {type: podman}\n",
			`server.broker.instances[1] (key "k8s-batch"): runtime_target.type "podman": use docker or kubernetes`},
		{"missing type", "      - key: a\n        name: a\n        runtime_target: {context: c}\n",
			`server.broker.instances[0] (key "a"): runtime_target.type: missing: use docker or kubernetes`},
		{"no runtime_target", "      - key: a\n        name: a\n",
			`server.broker.instances[0] (key "a"): runtime_target.type: missing`},
		{"unknown field", "      - key: a\n        name: a\n        runtime_targt: {type: docker}\n",
			`server.broker.instances[0] (key "a"): runtime_targt (line 6): unknown field; did you mean runtime_target?`},
		{"unknown field far from every field", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        colour: blue\n",
			`server.broker.instances[0] (key "a"): colour (line 7): unknown field; known fields here: agent_defaults, key, maxAgents, name, runtime_target`},
		{"unknown target field", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, namespce: x}\n",
			`server.broker.instances[0] (key "a"): runtime_target.namespce (line 6): unknown field; did you mean namespace?`},
		{"unknown agent_defaults field", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {resources: {memroy: 1Gi}}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.resources.memroy (line 7): unknown field; did you mean memory?`},
		{"negative maxAgents", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        maxAgents: -1\n",
			`server.broker.instances[0] (key "a"): maxAgents -1: use 0 (unlimited) or more`},
		{"maxAgents not a number", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        maxAgents: ten\n",
			`server.broker.instances[0] (key "a"): line 7: cannot unmarshal !!str` + " `ten` into int"},
		{"two docker entries", dockerEntry + "      - key: docker2\n        name: docker2\n        runtime_target: {type: docker}\n",
			`server.broker.instances[1] (key "docker2"): runtime_target: docker is already served by server.broker.instances[0] (key "local-docker"); keep one instance per runtime target`},
		{"one namespace twice (default spelled out)", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, context: c}\n      - key: b\n        name: b\n        runtime_target: {type: kubernetes, context: c, namespace: default}\n",
			`server.broker.instances[1] (key "b"): runtime_target: kubernetes:c/default is already served by server.broker.instances[0] (key "a")`},
		{"bad namespace", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, namespace: Agents}\n",
			`server.broker.instances[0] (key "a"): runtime_target.namespace "Agents": not a Kubernetes namespace name`},
		{"bad shared_dir_size", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, shared_dir_size: lots}\n",
			`server.broker.instances[0] (key "a"): runtime_target.shared_dir_size "lots": not a quantity like 10Gi`},
		// A negative or zero size parses as a quantity, but no claim can
		// be made with it: refused here, not at the first agent's start.
		{"negative shared_dir_size", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, shared_dir_size: -40Gi}\n",
			`server.broker.instances[0] (key "a"): runtime_target.shared_dir_size "-40Gi": a positive quantity like 10Gi is expected`},
		{"zero shared_dir_size", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, shared_dir_size: \"0\"}\n",
			`server.broker.instances[0] (key "a"): runtime_target.shared_dir_size "0": a positive quantity like 10Gi is expected`},
		{"image registry with an upper-case path", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {image_registry: registry.example.com/Agents}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.image_registry "registry.example.com/Agents": an image's path is lower-case`},
		// Object names the API server refuses only when the first agent's
		// pod or claim is made.
		{"bad priority_class", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, priority_class: High Priority}\n",
			`server.broker.instances[0] (key "a"): runtime_target.priority_class "High Priority": not a Kubernetes PriorityClass name`},
		{"bad shared_dir_class", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, shared_dir_class: Fast_SSD}\n",
			`server.broker.instances[0] (key "a"): runtime_target.shared_dir_class "Fast_SSD": not a Kubernetes StorageClass name`},
		{"bad home_storage", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, home_storage: disk}\n",
			`server.broker.instances[0] (key "a"): runtime_target.home_storage "disk": use emptydir, pvc or nfs`},
		{"bad safe_to_evict", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes, safe_to_evict: maybe}\n",
			`server.broker.instances[0] (key "a"): line 6: cannot unmarshal !!str` + " `maybe` into bool"},
		{"bad resources", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {resources: {cpus: many}}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.resources.cpus "many": a positive quantity like 1.5 is expected`},
		// Both runtimes take 0.001 to 1024 CPUs (to the millicore): a value
		// outside would refuse every create on the instance.
		{"cpus below a millicore", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {resources: {cpus: \"0.0001\"}}\n",
			`agent_defaults.resources.cpus "0.0001": 0.001 (1m) to 1024 CPUs are allowed`},
		{"cpus above the runtimes' limit", "      - key: a\n        name: a\n        runtime_target: {type: kubernetes}\n        agent_defaults: {harness_overrides: {claude: {resources: {cpus: \"2k\"}}}}\n",
			`agent_defaults.harness_overrides.claude.resources.cpus "2k": 0.001 (1m) to 1024 CPUs are allowed`},
		// 512m is 0.512 bytes as a Kubernetes quantity (a Docker user's
		// 512 MiB): a limit no agent can run under, refused at the start
		// rather than at every agent's create.
		{"memory in milli-bytes", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {resources: {memory: 512m}}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.resources.memory "512m": at least 1Mi is expected`},
		{"override memory under 1Mi", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {harness_overrides: {claude: {resources: {memory: \"1000\"}}}}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.harness_overrides.claude.resources.memory "1000": at least 1Mi is expected`},
		{"relative volume target", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {volumes: [{source: /d, target: data}]}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.volumes[0].target "data": an absolute path in the agent is expected`},
		{"unknown harness override", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {harness_overrides: {gpt: {image: x}}}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.harness_overrides.gpt: unknown harness`},
		{"negative clone_depth", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {clone_depth: -2}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.clone_depth -2: use 0 (full history) or more`},
		// The Hub stores only secrets named like environment variables: a
		// required secret named otherwise could never be given, and every
		// create on the instance would be refused.
		{"required secret the Hub cannot store", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {required_secrets: [API_KEY, gh-token]}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.required_secrets[1] "gh-token": a Hub secret name is letters, digits and _ (an environment variable name)`},
		{"required secret starting with a digit", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {required_secrets: [\"1TOKEN\"]}\n",
			`agent_defaults.required_secrets[0] "1TOKEN": a Hub secret name is letters, digits and _`},
		{"duplicate required secret", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {required_secrets: [A, A]}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.required_secrets[1] "A": already required_secrets[0]`},
		{"image registry with a scheme", "      - key: a\n        name: a\n        runtime_target: {type: docker}\n        agent_defaults: {image_registry: \"https://r.example.com\"}\n",
			`server.broker.instances[0] (key "a"): agent_defaults.image_registry "https://r.example.com": give a registry`},
		{"an entry that is not a mapping", "      - local-docker\n",
			`server.broker.instances[0] (line 4): an instance is a mapping with key, name and runtime_target`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDoc(t, instancesDoc(tc.entries))
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, tc.want)
			}
		})
	}
}

func TestInstancesNotAListRefused(t *testing.T) {
	_, err := parseDoc(t, "server:\n  broker:\n    instances: {key: a}\n")
	if err == nil || !strings.Contains(err.Error(), "server.broker.instances (line 3): a list of instances is expected") {
		t.Fatalf("err = %v", err)
	}
}

func TestInstancesAbsentOrEmpty(t *testing.T) {
	for doc, configured := range map[string]bool{
		"server:\n  broker:\n    name: b\n":       false,
		"server:\n  broker:\n    instances:\n":    false,
		"server:\n  broker:\n    instances: []\n": true,
		instancesDoc(dockerEntry):                 true,
	} {
		var s Settings
		if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatal(err)
		}
		if got := s.Server.Broker.Instances.Configured(); got != configured {
			t.Errorf("%q: Configured = %v, want %v", doc, got, configured)
		}
		if _, err := s.Server.Broker.Instances.Parse(); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// settings.yaml round-trips its instances (an invalid entry included:
// loading and saving never fail on them), and a list of Instances
// marshalled into it (as test/system writes one) parses back.
func TestInstancesRoundTrip(t *testing.T) {
	doc := instancesDoc(dockerEntry + "      - key: bad\n        name: bad\n        runtime_target: {type: podman}\n")
	var s Settings
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "type: podman") || !strings.Contains(string(out), "key: local-docker") {
		t.Errorf("saved:\n%s", out)
	}
	var empty Settings
	if out, _ := yaml.Marshal(&empty); strings.Contains(string(out), "instances") {
		t.Errorf("an absent list is saved:\n%s", out)
	}

	max := 3
	b, err := yaml.Marshal([]Instance{{Key: "k", Name: "n", RuntimeTarget: RuntimeTargetSettings{Type: "kubernetes", Namespace: "agents"}, MaxAgents: &max}})
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &s.Server.Broker.Instances); err != nil {
		t.Fatal(err)
	}
	out, _ = yaml.Marshal(&s)
	var back Settings
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.Server.Broker.Instances.Parse()
	if err != nil || len(got) != 1 || got[0].Key != "k" || *got[0].MaxAgents != 3 || got[0].RuntimeTarget.Namespace != "agents" {
		t.Fatalf("parsed back %+v, %v from:\n%s", got, err, out)
	}
}

func TestResolveTargets(t *testing.T) {
	ins := []Instance{
		{Key: "d", RuntimeTarget: RuntimeTargetSettings{Type: "docker"}},
		{Key: "k", RuntimeTarget: RuntimeTargetSettings{Type: "kubernetes"}},
		{Key: "k2", RuntimeTarget: RuntimeTargetSettings{Type: "kubernetes", Context: "other", Namespace: "agents"}},
	}
	got, err := ResolveTargets(ins, "kind-dev")
	if err != nil {
		t.Fatal(err)
	}
	want := []RuntimeTarget{{Type: "docker"}, {Type: "kubernetes", Context: "kind-dev", Namespace: "default"}, {Type: "kubernetes", Context: "other", Namespace: "agents"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets = %+v, want %+v", got, want)
	}
	// Only the current context makes these two one target.
	ins = append(ins, Instance{Key: "k3", RuntimeTarget: RuntimeTargetSettings{Type: "kubernetes", Context: "kind-dev"}})
	if err := ValidateInstances(withNames(ins)); err != nil {
		t.Fatalf("validation cannot know the current context, yet: %v", err)
	}
	if _, err := ResolveTargets(ins, "kind-dev"); err == nil || !strings.Contains(err.Error(),
		`server.broker.instances[3] (key "k3"): runtime_target: kubernetes:kind-dev/default is already served by server.broker.instances[1] (key "k")`) {
		t.Errorf("err = %v", err)
	}
}

func withNames(ins []Instance) []Instance {
	for i := range ins {
		ins[i].Name = ins[i].Key
	}
	return ins
}

func TestFindInstance(t *testing.T) {
	ins := []Instance{{Key: "a"}, {Key: "b"}}
	if in, err := FindInstance(ins, "b"); err != nil || in.Key != "b" {
		t.Fatalf("%v %v", in, err)
	}
	if _, err := FindInstance(ins, "c"); err == nil || !strings.Contains(err.Error(), "the keys are: a, b") {
		t.Errorf("err = %v", err)
	}
}

// The typo warnings know the instances' keys.
func TestUnknownKeysInInstances(t *testing.T) {
	doc := instancesDoc(`      - key: k
        name: k
        runtime_target: {type: kubernetes, context: c, namespace: n, shared_dir_size: 1Gi, shared_dir_class: x, safe_to_evict: true, priority_class: p, gke_mode: true, shared_dir_storage: pvc, home_storage: pvc}
        maxAgents: 1
        agent_defaults: {image_registry: r, harness_config: h, volumes: [{source: s, target: /t, read_only: true}], resources: {memory: 1Gi, cpus: "1"}, harness_overrides: {claude: {image: i}}, required_secrets: [s], clone_depth: 1}
      - key: j
        nme: j
`)
	want := []string{"server.broker.instances[1].nme (line 10): unknown key; did you mean name?"}
	if got := UnknownKeys([]byte(doc)); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings = %q, want %q", got, want)
	}
}

// config's runtime target type mirrors api's (a settings file decodes it): they
// must agree.
func TestConfigRulesAreAPIs(t *testing.T) {
	if TargetDocker != api.RuntimeTargetDocker || TargetKubernetes != api.RuntimeTargetKubernetes {
		t.Error("target types differ from api's")
	}
	for _, tg := range []RuntimeTarget{{Type: "docker"}, {Type: "kubernetes", Context: "c", Namespace: "n"}} {
		if tg.String() != api.RuntimeTarget(tg).String() {
			t.Errorf("%+v: %s, api %s", tg, tg.String(), api.RuntimeTarget(tg).String())
		}
	}
}
