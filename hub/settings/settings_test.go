package settings

import (
	"reflect"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestIfMatchVersion(t *testing.T) {
	v := func(n int64) *int64 { return &n }
	for _, tt := range []struct {
		header string
		want   *int64
	}{
		{"", nil},
		{"*", nil},
		{" * ", nil},
		{`"7"`, v(7)},
		{` "0" `, v(0)},
		{`W/"7"`, v(-1)},    // a weak tag is none this Hub makes
		{`"7", "8"`, v(-1)}, // a list
		{`7`, v(-1)},        // unquoted
		{`"-3"`, v(-1)},
		{`"x"`, v(-1)},
		{`"7`, v(-1)},
	} {
		got := ifMatchVersion(tt.header)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ifMatchVersion(%q) = %v, want %v", tt.header, deref(got), deref(tt.want))
		}
	}
	if got := settingsETag(12); got != `"12"` {
		t.Errorf("settingsETag(12) = %s", got)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestApplySettingsUpdate: an update sets what it names and keeps the
// rest, experiments included (two admins changing different settings
// both keep their change).
func TestApplySettingsUpdate(t *testing.T) {
	s := func(v string) *string { return &v }
	cur := api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultHarness: "claude", DefaultImage: "img:1"},
		Experiments: map[string]bool{"a": true}}
	applySettingsUpdate(&cur, &api.AgentDefaultsUpdate{DefaultImage: s("img:2")}, map[string]bool{"b": true})
	want := api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultHarness: "claude", DefaultImage: "img:2"},
		Experiments: map[string]bool{"a": true, "b": true}}
	if !reflect.DeepEqual(cur, want) {
		t.Errorf("got %+v, want %+v", cur, want)
	}
	applySettingsUpdate(&cur, &api.AgentDefaultsUpdate{DefaultHarness: s("")}, map[string]bool{"a": false})
	if cur.AgentDefaults.DefaultHarness != "" || cur.AgentDefaults.DefaultImage != "img:2" || cur.Experiments["a"] || !cur.Experiments["b"] {
		t.Errorf("second update: %+v", cur)
	}
}

func TestSettingsViewNamesEveryExperiment(t *testing.T) {
	v := settingsView(api.HubSettings{})
	for _, e := range api.Experiments {
		if on, ok := v.Experiments[e]; !ok || on {
			t.Errorf("experiment %s: %v %v, want named and off", e, on, ok)
		}
	}
}

func TestLimitsRequest(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tt := range []struct {
		in   *int
		ok   bool
		want int
	}{
		{nil, false, 0}, {n(-1), false, 0}, {n(1_000_001), false, 0},
		{n(0), true, 0}, {n(5), true, 5}, {n(1_000_000), true, 1_000_000},
	} {
		got, err := limitsRequest{MaxAgentsPerBroker: tt.in}.limits()
		if (err == nil) != tt.ok || (tt.ok && got.MaxAgentsPerBroker != tt.want) {
			t.Errorf("limits(%v) = %v, %v", deref64(tt.in), got, err)
		}
	}
}

func deref64(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
