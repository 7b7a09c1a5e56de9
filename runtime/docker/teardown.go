package docker

import (
	"context"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types"
)

// Docker Engines before 20.10.27 (and 23.0, which carries the same fix)
// can deadlock in their network code when two containers on one network
// are torn down at once: one container's network leave takes the
// network's lock and then the network controller's, while the engine's
// service-record watcher, handling another endpoint's delete, takes them
// in the other order (moby/moby#42545, backported to 20.10 as
// moby/libnetwork#2679). From then on every container of that network
// stays "running" with its process gone, and every later stop, remove or
// inspect of it hangs until the engine restarts. Debian 12's docker.io is
// 20.10.24: a broker deleting 100 agents, 20 at a time, hit it in the
// last of ten such rounds of a CI run on a loaded 2-core machine.
//
// On such an engine the runtime tears its containers down one at a time
// (teardownGate): the cost is throughput of mass deletes (the engine
// serialises most of a teardown anyway), the gain an engine that stays
// usable. A stop holds the gate through its grace, since the teardown
// comes whenever the process exits: on such an engine, stopping many
// agents that ignore SIGTERM takes their graces one after another. A
// container that exits by itself is the engine's own teardown and is not
// gated; neither are other processes' containers.

// serialTeardown reports whether an engine that reports v as its version
// needs its container teardowns serialised. Podman has no such code; an
// engine whose version does not parse is assumed fixed.
func serialTeardown(v types.Version) bool {
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return false
		}
	}
	major, minor, patch, ok := parseEngineVersion(v.Version)
	if !ok {
		return false
	}
	switch {
	case major < 20:
		return true
	case major == 20 && minor < 10:
		return true
	case major == 20 && minor == 10:
		return patch < 27
	}
	return false
}

// parseEngineVersion reads "20.10.24+dfsg1", "19.03.15", "28.2.2".
func parseEngineVersion(s string) (major, minor, patch int, ok bool) {
	s, _, _ = strings.Cut(s, "+")
	s, _, _ = strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, false
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, 0, 0, false
		}
		nums[i] = n
	}
	return nums[0], nums[1], nums[2], true
}

// teardownGate lets one container teardown (a stop or a remove) at a
// time through; a nil gate lets every one through.
type teardownGate chan struct{}

func newTeardownGate(serial bool) teardownGate {
	if !serial {
		return nil
	}
	return make(teardownGate, 1)
}

// enter waits for the gate, bounded by ctx, and returns its release.
func (g teardownGate) enter(ctx context.Context) (func(), error) {
	if g == nil {
		return func() {}, nil
	}
	select {
	case g <- struct{}{}:
		return func() { <-g }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
