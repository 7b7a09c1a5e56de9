package cli

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzParseEnv checks parseEnv's contract on arbitrary input: an accepted
// KEY=VALUE round-trips, and an error is always a usage error (exit 2).
func FuzzParseEnv(f *testing.F) {
	for _, s := range []string{"A=1", "A=", "A=b=c", "=v", "NOEQ", "1A=x", "A-B=x", "_x=y", "A=\n", "é=1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, kv string) {
		env, err := parseEnv([]string{kv})
		if err != nil {
			if !isUsage(err) {
				t.Fatalf("%q: %v is not a usage error", kv, err)
			}
			return
		}
		if len(env) != 1 {
			t.Fatalf("%q: %v", kv, env)
		}
		for k, v := range env {
			if k+"="+v != kv || !envKeyRE.MatchString(k) {
				t.Fatalf("%q parsed as %q=%q", kv, k, v)
			}
		}
	})
}

// FuzzValidateName checks that an accepted name is safe as a path segment,
// a label and a table cell.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"web", "a.b_c-d", "-x", ".x", "a b", "a/b", "", strings.Repeat("a", 64), "ünï", "x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if err := validateName("agent", name); err != nil {
			if !isUsage(err) {
				t.Fatalf("%q: %v is not a usage error", name, err)
			}
			return
		}
		if name == "" || len(name) > 63 || strings.ContainsAny(name, "/\\ \t\n?#%") || name[0] == '-' || name[0] == '.' {
			t.Fatalf("accepted unsafe name %q", name)
		}
		for _, r := range name {
			if r > unicode.MaxASCII {
				t.Fatalf("accepted non-ASCII name %q", name)
			}
		}
	})
}
