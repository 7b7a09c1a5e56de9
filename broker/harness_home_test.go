package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestBuildHomeFromHarness(t *testing.T) {
	for name, h := range harnesses {
		home := t.TempDir()
		if err := buildHome(home, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for rel, want := range h.Home {
			got, err := os.ReadFile(filepath.Join(home, rel))
			if err != nil || string(got) != want {
				t.Fatalf("%s: %s = %q, %v", name, rel, got, err)
			}
			if !json.Valid(got) {
				t.Fatalf("%s: %s is not valid JSON", name, rel)
			}
			if fi, _ := os.Stat(filepath.Join(home, rel)); fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %s mode %v", name, rel, fi.Mode())
			}
		}
	}
	if len(harnesses["claude"].Home) == 0 {
		t.Fatal("the claude harness builds no home")
	}
	// The generic harness builds an empty home.
	home := t.TempDir()
	if err := buildHome(home, ""); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("generic home: %v", entries)
	}
}
