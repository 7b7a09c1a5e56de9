package docker

import (
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
)

func TestOldestNetwork(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := func(id string, d time.Duration) network.Summary { return network.Summary{ID: id, Created: t0.Add(d)} }
	for _, tc := range []struct {
		name string
		nets []network.Summary
		want string
	}{
		{"none", nil, ""},
		{"one", []network.Summary{n("b", 0)}, "b"},
		{"the first created", []network.Summary{n("a", time.Millisecond), n("c", 0), n("b", 2*time.Millisecond)}, "c"},
		{"a tie: the smaller ID", []network.Summary{n("b", 0), n("a", 0)}, "a"},
	} {
		got, ok := oldestNetwork(tc.nets)
		if ok != (tc.want != "") || got.ID != tc.want {
			t.Errorf("%s: oldestNetwork = %q, %v; want %q", tc.name, got.ID, ok, tc.want)
		}
	}
}
