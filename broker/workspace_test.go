package broker

import (
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
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

func TestEmptyWorkspacesPrepareAndRemove(t *testing.T) {
	l := layout{root: t.TempDir()}
	w := emptyWorkspaces{layout: l}
	dir, err := w.Prepare(t.Context(), wire.AgentSpec{AgentID: "a", ProjectID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(l.agentDir("p", "a"), "workspace"); dir != want {
		t.Fatalf("dir = %s, want %s", dir, want)
	}
	if err := w.Remove(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(dir); len(m) != 0 {
		t.Fatalf("workspace still there")
	}
}
