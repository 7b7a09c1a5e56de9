// Package agentcases is the one table of good and bad agent create
// values that every layer's test feeds to its own check (the CLI's
// `scion create`, the Hub's POST /agents, the broker's agent.create, the
// api rule itself): the layers must agree on each, so that a value any
// of them refuses is refused by the first, before a create is accepted.
package agentcases

import (
	"fmt"
	"strings"

	"github.com/scion-go/scion/api"
)

// Case changes one field of a valid create. Nil fields keep Base's value.
type Case struct {
	Name       string
	Agent      *string
	Image      *string
	Harness    *string
	Profile    *string
	Env        map[string]string
	Ports      []int
	Secrets    []string
	Kubernetes map[string]string
	Command    []string
	OK         bool
}

// Base is a create every layer accepts.
var Base = api.CreateAgentRequest{Name: "fixer", Image: "registry.example/team/agent:v1", Command: []string{"sleep", "1000"}}

func s(v string) *string { return &v }

// Cases are the values of the rules: the agent's name, image, harness,
// profile, env, ports, secrets, Kubernetes settings and command.
var Cases = []Case{
	{Name: "base", OK: true},
	{Name: "name of 63", Agent: s(strings.Repeat("a", 63)), OK: true},
	{Name: "name of 64", Agent: s(strings.Repeat("a", 64))},
	{Name: "name upper case", Agent: s("Fixer")},
	{Name: "name with a dot", Agent: s("fix.er")},
	{Name: "name shaped like an ID", Agent: s("0190a3b2-7c4d-7e8f-9a0b-1c2d3e4f5a6b")},
	{Name: "image of 512", Image: s("r/" + strings.Repeat("i", 510)), OK: true},
	{Name: "image of 513", Image: s("r/" + strings.Repeat("i", 511))},
	{Name: "image with a space", Image: s("busybox latest")},
	{Name: "image with a newline", Image: s("busybox\nx")},
	{Name: "harness claude", Harness: s("claude"), Env: map[string]string{"ANTHROPIC_API_KEY": "k"}, OK: true},
	{Name: "harness claude without its key", Harness: s("claude")},
	{Name: "harness gemini with an empty key", Harness: s("gemini"), Env: map[string]string{"GEMINI_API_KEY": ""}},
	{Name: "harness unknown", Harness: s("vim")},
	{Name: "profile with a dot", Profile: s("k8s.gpu")},
	{Name: "profile upper case", Profile: s("K8S")},
	{Name: "env ok", Env: map[string]string{"MODE": "fast", "_X": ""}, OK: true},
	{Name: "env name of 128", Env: map[string]string{strings.Repeat("E", 128): "v"}, OK: true},
	{Name: "env name of 129", Env: map[string]string{strings.Repeat("E", 129): "v"}},
	{Name: "env name with a dash", Env: map[string]string{"A-B": "v"}},
	{Name: "env name starting with a digit", Env: map[string]string{"1A": "v"}},
	{Name: "257 env entries", Env: many(257)},
	{Name: "ports ok", Ports: []int{8080, 9090}, OK: true},
	{Name: "port 0", Ports: []int{0}},
	{Name: "port 65536", Ports: []int{65536}},
	{Name: "port twice", Ports: []int{8080, 8080}},
	{Name: "secret name with a dash", Secrets: []string{"API-KEY"}},
	{Name: "secret name of 129", Secrets: []string{strings.Repeat("S", 129)}},
	{Name: "kubernetes setting ok", Kubernetes: map[string]string{"shared_dir_size": "1Gi"}, OK: true},
	{Name: "kubernetes key upper case", Kubernetes: map[string]string{"Namespace": "x"}},
	{Name: "kubernetes value of 254", Kubernetes: map[string]string{"namespace": strings.Repeat("v", 254)}},
	{Name: "257 command arguments", Command: args(257)},
}

func many(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("E%d", i)] = "v"
	}
	return m
}

func args(n int) []string {
	c := make([]string, n)
	for i := range c {
		c[i] = "a"
	}
	return c
}

// Apply returns Base with the case's changes, in project.
func (c Case) Apply(project string) api.CreateAgentRequest {
	r := Base
	r.Project = project
	if c.Agent != nil {
		r.Name = *c.Agent
	}
	if c.Image != nil {
		r.Image = *c.Image
	}
	if c.Harness != nil {
		r.Harness = *c.Harness
	}
	if c.Profile != nil {
		r.Profile = *c.Profile
	}
	if c.Command != nil {
		r.Command = c.Command
	}
	r.Env, r.Ports, r.Secrets, r.Kubernetes = c.Env, c.Ports, c.Secrets, c.Kubernetes
	return r
}

// Args is the case as `scion create` arguments: its flags, then the
// command after --.
func (c Case) Args(project string) []string {
	r := c.Apply(project)
	out := []string{"create", r.Name, "--project", project}
	if r.Image != "" {
		out = append(out, "--image", r.Image)
	}
	if r.Harness != "" {
		out = append(out, "--harness", r.Harness)
	}
	if r.Profile != "" {
		out = append(out, "-p", r.Profile)
	}
	for k, v := range r.Env {
		out = append(out, "--env", k+"="+v)
	}
	for _, p := range r.Ports {
		out = append(out, "--port", fmt.Sprint(p))
	}
	for _, n := range r.Secrets {
		out = append(out, "--secret", n)
	}
	for k, v := range r.Kubernetes {
		out = append(out, "--k8s", k+"="+v)
	}
	return append(append(out, "--"), r.Command...)
}
