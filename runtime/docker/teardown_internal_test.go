package docker

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
)

func TestSerialTeardown(t *testing.T) {
	podman := types.Version{Version: "4.3.1", Components: []types.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}}
	for _, tc := range []struct {
		v    types.Version
		want bool
	}{
		{types.Version{Version: "20.10.24+dfsg1"}, true}, // Debian 12's docker.io
		{types.Version{Version: "20.10.26"}, true},
		{types.Version{Version: "20.10.27"}, false}, // the backport
		{types.Version{Version: "19.03.15"}, true},
		{types.Version{Version: "18.09.1-ce"}, true},
		{types.Version{Version: "23.0.0"}, false},
		{types.Version{Version: "28.2.2"}, false},
		{types.Version{Version: "29.1.0-rc.1"}, false},
		{podman, false},
		{types.Version{Version: ""}, false},
		{types.Version{Version: "dev"}, false},
		{types.Version{Version: "20.10.x"}, false},
	} {
		if got := serialTeardown(tc.v); got != tc.want {
			t.Errorf("serialTeardown(%q %v) = %v, want %v", tc.v.Version, tc.v.Components, got, tc.want)
		}
	}
}

func TestTeardownGate(t *testing.T) {
	ctx := context.Background()
	var open teardownGate // nil: every teardown passes at once
	r1, _ := open.enter(ctx)
	r2, err := open.enter(ctx)
	if err != nil {
		t.Fatalf("a nil gate refused a second teardown: %v", err)
	}
	r1()
	r2()

	g := newTeardownGate(true)
	release, err := g.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := g.enter(short); err == nil {
		t.Fatal("a second teardown passed while the first held the gate")
	}
	release()
	again, err := g.enter(ctx)
	if err != nil {
		t.Fatalf("the gate stayed shut after its release: %v", err)
	}
	again()
}
