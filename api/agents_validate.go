package api

import (
	"regexp"
	"strings"
)

// The one check of an agent create (CreateAgentRequest.Validate) and the
// rules it shares with Jobs and settings: the CLI runs it before sending,
// the Hub before reading anything, the broker on the spec it is sent.

// Bounds of an agent create.
const (
	MaxAgentCommandArgs = 256
	MaxAgentEnv         = 256
	MaxAgentSecrets     = 64
	// MaxKubernetesSettings bounds the per-agent Kubernetes settings
	// (shared_dir_size, ...); MaxKubernetesValueLen each value.
	MaxKubernetesSettings = 32
	MaxKubernetesValueLen = 253
)

// kubernetesKeyRE is the shape of a Kubernetes setting key (shared_dir_size).
var kubernetesKeyRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// CheckImage is the rule of an image reference, an agent's, a Job's or
// the Hub's default: at most MaxImageLen bytes of text with no space.
// Whether one is required is the caller's rule.
func CheckImage(field, image string) error {
	if err := CheckText(field, image, MaxImageLen); err != nil {
		return err
	}
	if strings.ContainsAny(image, " \t\u00a0") {
		return BadRequest("%s %s holds a space", field, Quote(image))
	}
	return nil
}

// CheckProfile checks a profile named in a request or a project's
// settings ("" is none): a profile name is a path segment and a label on
// the broker, so it follows the name rule.
func CheckProfile(field, n string) error {
	if n == "" || ValidName(n) {
		return nil
	}
	return BadRequest("invalid %s %s: a profile name is 1-%d lower-case letters, digits and '-', starting and ending with a letter or digit",
		field, Quote(n), MaxNameLen)
}

// CheckSecretName is the rule of a secret's name wherever one is named
// (ValidSecretName), with the answer that says it.
func CheckSecretName(n string) error {
	if !ValidSecretName(n) {
		return BadRequest("invalid secret name %s: use letters, digits and _ (an environment variable name), at most %d", Quote(n), MaxEnvNameLen)
	}
	return nil
}

// CheckAgentEnv refuses too many variables or a name that is not an
// identifier (ValidEnvName).
func CheckAgentEnv(env map[string]string) error {
	if len(env) > MaxAgentEnv {
		return BadRequest("env has %d entries, at most %d", len(env), MaxAgentEnv)
	}
	for k := range env {
		if !ValidEnvName(k) {
			return BadRequest("invalid environment variable name %s: use letters, digits and _ (not starting with a digit), at most %d", Quote(k), MaxEnvNameLen)
		}
	}
	return nil
}

// WithDefaults fills in what a create leaves to the system: the generic
// harness. (The Hub's Agent Defaults come first: the Hub applies them
// before this.)
func (r *CreateAgentRequest) WithDefaults() {
	if r.Harness == "" {
		r.Harness = DefaultHarness
	}
}

// Validate is the one check of a CreateAgentRequest on its face: every
// refusal is a 400 invalid_request naming the field. What needs records
// (the project, the broker, the role the caller may delegate, the
// secrets' values) is the Hub's to decide after it.
func (r *CreateAgentRequest) Validate() error {
	if err := CheckName("agent", r.Name); err != nil {
		return err
	}
	if err := CheckText("project", r.Project, MaxRefLen); err != nil {
		return err
	}
	if err := CheckImage("image", r.Image); err != nil {
		return err
	}
	if r.Harness != "" {
		if err := CheckHarness("harness", r.Harness); err != nil {
			return err
		}
	}
	if err := CheckHarnessAuth(r.Harness, r.Env, r.Secrets); err != nil {
		return err
	}
	if err := CheckProfile("profile", r.Profile); err != nil {
		return err
	}
	if err := CheckText("broker", r.Broker, MaxRefLen); err != nil {
		return err
	}
	if len(r.Command) > MaxAgentCommandArgs {
		return BadRequest("command has %d arguments, at most %d", len(r.Command), MaxAgentCommandArgs)
	}
	if err := CheckAgentEnv(r.Env); err != nil {
		return err
	}
	if len(r.Secrets) > MaxAgentSecrets {
		return BadRequest("an agent can name at most %d secrets", MaxAgentSecrets)
	}
	for _, n := range r.Secrets {
		if err := CheckSecretName(n); err != nil {
			return err
		}
	}
	if len(r.Kubernetes) > MaxKubernetesSettings {
		return BadRequest("kubernetes settings are limited to %d entries", MaxKubernetesSettings)
	}
	for k, v := range r.Kubernetes {
		if !kubernetesKeyRE.MatchString(k) || len(v) > MaxKubernetesValueLen {
			return BadRequest("invalid kubernetes setting %s: keys are lower-case words joined by _, values at most %d bytes", Quote(k), MaxKubernetesValueLen)
		}
	}
	return ValidatePorts(r.Ports)
}
