package cli

import (
	"strings"
	"testing"
	"unicode"

	"github.com/scion-go/scion/api"
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
			if k+"="+v != kv || !api.ValidEnvName(k) {
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
		if name == "" || len(name) > 63 || strings.ContainsAny(name, "/\\ \t\n?#%._") || name[0] == '-' || name[0] == '.' {
			t.Fatalf("accepted unsafe name %q", name)
		}
		// The Hub applies the same rule: what the CLI accepts it takes.
		if !api.ValidName(name) || strings.ToLower(name) != name {
			t.Fatalf("accepted %q, which the Hub refuses", name)
		}
		for _, r := range name {
			if r > unicode.MaxASCII {
				t.Fatalf("accepted non-ASCII name %q", name)
			}
		}
	})
}

// The CLI's name rule is the Hub's (api.ValidName): names it used to take
// and the Hub refused ('.', '_', upper case) are refused before a round
// trip, as usage errors.
func TestValidateNameIsTheHubRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"web", true}, {"web-2", true}, {"a", true},
		{"Web", false}, {"a.b", false}, {"a_b", false}, {"web-", false},
		{"../../etc", false}, {"a\nb", false}, {"a\x00", false},
	} {
		err := validateName("agent", tc.name)
		if (err == nil) != tc.ok || (err == nil) != api.ValidName(tc.name) {
			t.Errorf("validateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && (!isUsage(err) || !strings.Contains(err.Error(), "invalid agent name")) {
			t.Errorf("validateName(%q) = %v: want a usage error naming the kind", tc.name, err)
		}
	}
}
