package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestValidID(t *testing.T) {
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a\x00b", "/abs", string(make([]byte, 201))} {
		if err := validID("agent ID", id); !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("validID(%q) = %v, want invalid_request", id, err)
		}
	}
	for _, id := range []string{"a", "0b5e6c1e-8a5d-4c0e-9f8e-1d2c3b4a5f60", "a..b", "x*"} {
		if err := validID("agent ID", id); err != nil {
			t.Errorf("validID(%q) = %v", id, err)
		}
	}
}

func TestLayoutWithin(t *testing.T) {
	l := layout{root: "/data"}
	for path, want := range map[string]bool{
		"/data":                         false, // the root itself is never removed
		"/data/projects/p/agents/a":     true,
		"/data/../etc":                  false,
		"/etc":                          false,
		"/database":                     false,
		filepath.Join("/data", "..x"):   true,
		l.agentDir("p", "a") + "/../..": true,
	} {
		if got := l.within(filepath.Clean(path)); got != want {
			t.Errorf("within(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestSafeDirRefusesSymlinkEscapes(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	l := layout{root: root}
	if err := os.MkdirAll(filepath.Join(root, "projects", "ok"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "projects", "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "nope"), filepath.Join(root, "projects", "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "projects", "ok"), filepath.Join(root, "projects", "alias")); err != nil {
		t.Fatal(err)
	}
	for path, ok := range map[string]bool{
		l.agentDir("ok", "a"):       true, // does not exist yet: fine
		l.agentDir("alias", "a"):    true, // a symlink that stays inside
		l.agentDir("evil", "a"):     false,
		l.agentDir("dangling", "a"): false,
		l.projectDir("evil"):        false,
		filepath.Join(root, ".."):   false,
		root:                        false,
	} {
		err := l.safeDir(path)
		if ok && err != nil {
			t.Errorf("safeDir(%s) = %v", path, err)
		}
		if !ok && !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("safeDir(%s) = %v, want invalid_request", path, err)
		}
	}
}
