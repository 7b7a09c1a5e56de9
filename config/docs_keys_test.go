package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every settings key the README and docs/ name (server.broker.runtime,
// server.hub.listen, ...) is one the settings types read: a documented
// key is never reported as unknown, so none is documented but ignored by
// the decoder.
func TestDocumentedSettingsKeysAreKnown(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	keyRE := regexp.MustCompile("`(server\\.[a-z_.]+[a-z_])")
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range keyRE.FindAllStringSubmatch(string(b), -1) {
			key := m[1]
			if seen[key] {
				continue
			}
			seen[key] = true
			if w := UnknownKeys([]byte(nestedYAML(key))); len(w) > 0 {
				t.Errorf("%s documents %s, which settings.yaml does not read: %v", f, key, w)
			}
		}
	}
	for _, want := range []string{"server.broker.runtime", "server.hub.listen", "server.hub.db"} {
		if !seen[want] {
			t.Errorf("%s is documented nowhere", want)
		}
	}
}

// nestedYAML turns a.b.c into a: {b: {c: x}}.
func nestedYAML(key string) string {
	parts := strings.Split(key, ".")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i < len(parts)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(" x\n")
	return b.String()
}
