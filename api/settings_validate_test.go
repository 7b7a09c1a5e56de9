package api_test

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// TestHubSettingsUpdateValidate: the defaults an update gives follow the
// rules a create applies to the same values (an image a create would
// refuse cannot become every create's default).
func TestHubSettingsUpdateValidate(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		u    api.HubSettingsUpdate
		ok   bool
	}{
		{"nothing", api.HubSettingsUpdate{}, true},
		{"image and harness", api.HubSettingsUpdate{AgentDefaults: &api.AgentDefaultsUpdate{DefaultImage: s("r/agent:v1"), DefaultHarness: s("claude")}}, true},
		{"clear the image", api.HubSettingsUpdate{AgentDefaults: &api.AgentDefaultsUpdate{DefaultImage: s("")}}, true},
		{"known experiment", api.HubSettingsUpdate{Experiments: map[string]bool{api.Experiments[0]: true}}, true},
		{"image with a space", api.HubSettingsUpdate{AgentDefaults: &api.AgentDefaultsUpdate{DefaultImage: s("busybox latest")}}, false},
		{"image of 513", api.HubSettingsUpdate{AgentDefaults: &api.AgentDefaultsUpdate{DefaultImage: s("r/" + strings.Repeat("i", 511))}}, false},
		{"unknown harness", api.HubSettingsUpdate{AgentDefaults: &api.AgentDefaultsUpdate{DefaultHarness: s("vim")}}, false},
		{"broker reference of 129", api.HubSettingsUpdate{AgentDefaults: &api.AgentDefaultsUpdate{DefaultRuntimeBroker: s(strings.Repeat("b", 129))}}, false},
		{"unknown experiment", api.HubSettingsUpdate{Experiments: map[string]bool{"warp_drive": true}}, false},
	} {
		err := tc.u.Validate()
		if (err == nil) != tc.ok || (err != nil && !api.IsCode(err, api.CodeInvalidRequest)) {
			t.Errorf("%s: Validate = %v, want ok %v", tc.name, err, tc.ok)
		}
		if tc.u.AgentDefaults != nil && tc.ok {
			// What the Hub checks after applying it, the same rule.
			var d api.AgentDefaults
			if p := tc.u.AgentDefaults.DefaultImage; p != nil {
				d.DefaultImage = *p
			}
			if p := tc.u.AgentDefaults.DefaultHarness; p != nil {
				d.DefaultHarness = *p
			}
			if err := d.Validate(); err != nil {
				t.Errorf("%s: the defaults it leaves are refused: %v", tc.name, err)
			}
		}
	}
}
