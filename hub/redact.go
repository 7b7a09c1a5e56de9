package hub

import "strings"

// secretHints are parts of environment variable names that mark a value
// as a credential. The API never returns such values: an agent's env is
// shown with them replaced, so a token passed with --env cannot leak
// through `scion list -o json` or a log of API responses.
var secretHints = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE"}

const redacted = "***"

func looksSecret(name string) bool {
	u := strings.ToUpper(name)
	for _, h := range secretHints {
		if strings.Contains(u, h) {
			return true
		}
	}
	return false
}

// redactEnv returns env with credential-like values replaced.
func redactEnv(env map[string]string) map[string]string {
	if len(env) == 0 {
		return env
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if looksSecret(k) && v != "" {
			v = redacted
		}
		out[k] = v
	}
	return out
}
