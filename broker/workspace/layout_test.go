package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestValidID(t *testing.T) {
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a\x00b", "/abs", string(make([]byte, 201))} {
		if err := ValidID("agent ID", id); !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("validID(%q) = %v, want invalid_request", id, err)
		}
	}
	for _, id := range []string{"a", "0b5e6c1e-8a5d-4c0e-9f8e-1d2c3b4a5f60", "a..b", "x*"} {
		if err := ValidID("agent ID", id); err != nil {
			t.Errorf("validID(%q) = %v", id, err)
		}
	}
}

func TestLayoutWithin(t *testing.T) {
	l := Layout{Root: "/data"}
	for path, want := range map[string]bool{
		"/data":                         false, // the root itself is never removed
		"/data/projects/p/agents/a":     true,
		"/data/../etc":                  false,
		"/etc":                          false,
		"/database":                     false,
		filepath.Join("/data", "..x"):   true,
		l.AgentDir("p", "a") + "/../..": true,
	} {
		if got := l.within(filepath.Clean(path)); got != want {
			t.Errorf("within(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestSafeDirRefusesSymlinkEscapes(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	l := Layout{Root: root}
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
		l.AgentDir("ok", "a"):       true, // does not exist yet: fine
		l.AgentDir("alias", "a"):    true, // a symlink that stays inside
		l.AgentDir("evil", "a"):     false,
		l.AgentDir("dangling", "a"): false,
		l.ProjectDir("evil"):        false,
		filepath.Join(root, ".."):   false,
		root:                        false,
	} {
		err := l.SafeDir(path)
		if ok && err != nil {
			t.Errorf("safeDir(%s) = %v", path, err)
		}
		if !ok && !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("safeDir(%s) = %v, want invalid_request", path, err)
		}
	}
}

// TestSafeDirsFastPathKeepsTheChecks: safeDirs settles plain directories
// with lstats below the root and shares elements between its paths; a
// root reached through a symlink, an escape in a later path of the same
// call and a file where a directory belongs still get the full check.
func TestSafeDirsFastPathKeepsTheChecks(t *testing.T) {
	real, outside := t.TempDir(), t.TempDir()
	root := filepath.Join(t.TempDir(), "data")
	if err := os.Symlink(real, root); err != nil { // the data directory itself a symlink
		t.Fatal(err)
	}
	l := Layout{Root: root}
	if err := os.MkdirAll(filepath.Join(root, "projects", "p", "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "projects", "p", "base")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "projects", "p", "shared"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.safeDirs(l.AgentDir("p", "a"), l.AgentDir("p", "b"), l.ProjectDir("q")); err != nil {
		t.Errorf("plain paths under a symlinked root: %v", err)
	}
	if err := l.safeDirs(l.AgentDir("p", "a"), l.BaseDir("p")); !api.IsCode(err, api.CodeInvalidRequest) {
		t.Errorf("a later path through a symlink out of the root: %v, want invalid_request", err)
	}
	// A file where a directory belongs resolves inside the root: allowed
	// by the check (making a directory there then fails), as before.
	if err := l.safeDirs(l.SharedDir("p")); err != nil {
		t.Errorf("a file inside the root: %v", err)
	}
	if err := l.safeDirs(filepath.Join(l.SharedDir("p"), "x")); err == nil || api.IsCode(err, api.CodeInvalidRequest) {
		t.Errorf("a path below a file: %v, want the resolution's error", err)
	}
}
