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

// TestHomeFilesFollowNoLinks: a link an agent planted in its home (a
// directory on the way, or the file's own place) is never written
// through: the handoff and harness files go into the home or nowhere.
func TestHomeFilesFollowNoLinks(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "authorized_keys")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file's place is a link: replaced by a file of the home's.
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(filepath.Join(home, ".scion"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(home, ".scion", "handoff.md")); err != nil {
		t.Fatal(err)
	}
	if err := writeHandoff(home, "hello"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("the handoff was written through a link: the outside file holds %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(home, ".scion", "handoff.md")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the handoff file: %v, %v", fi, err)
	}
	// A directory on the way is a link: refused.
	home2 := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home2, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(home2, ".scion")); err != nil {
		t.Fatal(err)
	}
	if err := writeHandoff(home2, "hello"); err == nil {
		t.Fatal("a handoff through a linked directory was written")
	}
	if _, err := os.Stat(filepath.Join(outside, "handoff.md")); err == nil {
		t.Fatal("the handoff landed outside the home")
	}
}
