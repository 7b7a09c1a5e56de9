package channel

import "testing"

// TestRegistryOnlyTheCurrentSessionEnds: a reconnect replaces the old
// session, and the old one's late end does not remove the new one (no
// online/offline split brain); watchers hear of every new current one.
func TestRegistryOnlyTheCurrentSessionEnds(t *testing.T) {
	r := NewRegistry()
	a := NewSession("s1", "b1", nil)
	b := NewSession("s2", "b1", nil)
	_, changed := r.Watch("b1")
	if old := r.Put(a); old != nil {
		t.Fatalf("first Put replaced %v", old)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Put did not wake the watchers")
	}
	if old := r.Put(b); old != a {
		t.Fatalf("second Put replaced %v, want the first session", old)
	}
	if r.Remove(a) {
		t.Fatal("the replaced session's end removed the current one")
	}
	if r.Get("b1") != b || r.Count() != 1 {
		t.Fatalf("current %v, count %d", r.Get("b1"), r.Count())
	}
	if !r.Remove(b) || r.Get("b1") != nil || r.Count() != 0 {
		t.Fatal("the current session's end did not remove it")
	}
}

// TestEndRecordsWhatTheEndMeant: End closes ended (what a cut-off call
// waits for) and records whether the broker went offline with it.
func TestEndRecordsWhatTheEndMeant(t *testing.T) {
	s := NewSession("s1", "b1", nil)
	s.End(true)
	select {
	case <-s.ended:
	default:
		t.Fatal("End did not close ended")
	}
	if !s.wentOffline {
		t.Fatal("End(true) not recorded")
	}
	r := NewSession("s2", "b1", nil)
	r.End(false)
	if r.wentOffline {
		t.Fatal("End(false) recorded as offline")
	}
}
