package api

import (
	"slices"
	"strings"
)

// MaxNameLen is the longest name of a project, runtime broker, agent,
// access token, profile or hub-list entry.
const MaxNameLen = 63

// ValidName is the one name rule of Scion, shared by the Hub (which has
// the final say) and the CLI (which catches a typo before a round trip):
// 1 to 63 lower-case ASCII letters, digits and '-', starting and ending
// with a letter or digit. A name becomes a path segment on the broker
// host, a container name and label, a Kubernetes object name (a DNS
// label) and a table cell, so nothing else is safe in all of them: no
// '.', '/', '_', upper case, spaces or control characters. Nor may a name
// read as a UUID: records are looked up by ID, then by name, so a broker
// named after the ID of one deregistered with force would receive what
// that broker's stranded agents are sent.
func ValidName(n string) bool {
	if len(n) == 0 || len(n) > MaxNameLen || looksLikeID(n) {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(n)-1:
		default:
			return false
		}
	}
	return true
}

// looksLikeID reports whether n is a UUID as the Hub reads references:
// 8-4-4-4-12 hex digits, or 32 without the dashes.
func looksLikeID(n string) bool {
	hex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	switch len(n) {
	case 32:
	case 36:
		if n[8] != '-' || n[13] != '-' || n[18] != '-' || n[23] != '-' {
			return false
		}
	default:
		return false
	}
	for i := 0; i < len(n); i++ {
		if !hex(n[i]) && !(len(n) == 36 && (i == 8 || i == 13 || i == 18 || i == 23)) {
			return false
		}
	}
	return true
}

// CheckName refuses a name that breaks ValidName with a 400
// invalid_request naming the kind ("agent", "project", ...). The name is
// quoted and cut short in the message, so a hostile one is echoed neither
// whole nor raw.
func CheckName(kind, n string) error {
	if ValidName(n) {
		return nil
	}
	return BadRequest("invalid %s name %s: use 1-%d lower-case letters, digits and '-', starting and ending with a letter or digit, and not shaped like an ID",
		kind, Quote(n), MaxNameLen)
}

// Harnesses are the harness names the Hub accepts, sorted; the broker
// holds what each one runs.
var Harnesses = []string{"claude", "gemini", "generic"}

// HarnessAuthEnv names, by harness, the environment variables that can
// authenticate it: a create of such a harness must set one of them, in
// its env or as a secret of that name. A harness not listed needs none.
var HarnessAuthEnv = map[string][]string{
	"claude": {"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"},
	"gemini": {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
}

// CheckHarnessAuth refuses a create of harness h whose env (by value)
// and secrets (by name) set none of its HarnessAuthEnv.
func CheckHarnessAuth(h string, env map[string]string, secrets []string) error {
	need := HarnessAuthEnv[h]
	if len(need) == 0 || slices.ContainsFunc(need, func(k string) bool { return env[k] != "" || slices.Contains(secrets, k) }) {
		return nil
	}
	return BadRequest("harness %s needs one of these environment variables: %s", h, strings.Join(need, ", "))
}

// DefaultHarness is the harness of an agent that names none.
const DefaultHarness = "generic"

// CheckHarness refuses a harness that is not one of Harnesses; field is
// what the message calls it ("harness", "default_harness").
func CheckHarness(field, h string) error {
	if slices.Contains(Harnesses, h) {
		return nil
	}
	return BadRequest("unknown %s %s: use one of %v", field, Quote(h), Harnesses)
}

// MaxEnvNameLen bounds an environment variable's name, and so a secret's.
const MaxEnvNameLen = 128

// ValidEnvName is the one rule of an environment variable's name: a C
// identifier (ASCII letters, digits and '_', not starting with a digit) of
// 1 to MaxEnvNameLen bytes. Shells, Docker and Kubernetes all take it.
func ValidEnvName(n string) bool {
	if len(n) == 0 || len(n) > MaxEnvNameLen || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ValidSecretName is the rule of a secret's name (project, user and
// broker-scoped secrets, and every reference to one in settings and the
// fleet file): an environment variable's, since a secret is delivered as
// one.
func ValidSecretName(n string) bool { return ValidEnvName(n) }
