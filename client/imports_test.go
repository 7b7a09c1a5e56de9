package client

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/scion-go/scion"

// TestImports enforces the layering rule: client/ (and everything of ours
// it pulls in, transitively) may use only package api and the standard
// library, never hub/, broker/, store/, wire/ or a third-party module.
// It walks non-test imports with go/build, the same data `go list -deps`
// reports.
func TestImports(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{module + "/client": true, module + "/api": true}
	seen := map[string]bool{}
	var walk func(pkg string)
	walk = func(pkg string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		dir := filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/"))
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			switch {
			case imp == module || strings.HasPrefix(imp, module+"/"):
				if !allowed[imp] {
					t.Errorf("%s imports %s; client may import only api and the standard library", pkg, imp)
					continue
				}
				walk(imp)
			case imp == "github.com/coder/websocket":
				// The attach transport; it imports nothing of ours.
			case !isStdlib(imp):
				t.Errorf("%s imports third-party %s; client may import only api and the standard library", pkg, imp)
			}
		}
	}
	walk(module + "/client")
	if !seen[module+"/api"] {
		t.Errorf("expected client to import api (walk saw %v)", seen)
	}
}

// isStdlib uses the Go convention that only standard-library import paths
// have no dot in their first element.
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
