package broker

import (
	"errors"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// TestGlobalProjectOnAMultiHubBroker: a broker serving more than one Hub
// refuses an agent of a Hub's global project with 409
// global_project_disabled, before anything is made; with one Hub it runs,
// and a team project's agent runs either way.
func TestGlobalProjectOnAMultiHubBroker(t *testing.T) {
	for _, tc := range []struct {
		hubs    int
		global  bool
		refused bool
	}{
		{hubs: 0, global: true},
		{hubs: 1, global: true},
		{hubs: 2, global: false},
		{hubs: 2, global: true, refused: true},
		{hubs: 3, global: true, refused: true},
	} {
		hub := newTestHub(t)
		rt := fake.New()
		b := startBroker(t, hub, rt, func(c *Config) { c.HubConnections = tc.hubs })
		waitConnected(t, b)
		s := spec("g1")
		s.GlobalProject = tc.global
		if tc.global {
			s.ProjectName = api.GlobalProject
		}
		err := hub.call(wire.MethodAgentCreate, s, nil)
		if !tc.refused {
			if err != nil {
				t.Errorf("%d hubs, global %v: %v", tc.hubs, tc.global, err)
			}
			continue
		}
		wantCode(t, err, api.CodeGlobalProjectDisabled)
		var ae *api.Error
		if errors.As(err, &ae) && ae.Status != 409 {
			t.Errorf("status %d, want 409", ae.Status)
		}
		if _, err := rt.Inspect(t.Context(), "g1"); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("%d hubs: a refused create left a container: %v", tc.hubs, err)
		}
		if exists(b.layout.AgentDir("p1", "g1")) {
			t.Errorf("%d hubs: a refused create left its directory", tc.hubs)
		}
	}
}
