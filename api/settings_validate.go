package api

import (
	"maps"
	"slices"
)

// The one check of a settings update (PUT /api/v1/settings), the Hub's,
// and of the Agent Defaults it leaves, which every create then starts
// from.

// CheckExperiments refuses an experiment name this build does not know.
func CheckExperiments(m map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !KnownExperiment(name) {
			return BadRequest("unknown experiment %s: this Hub knows %s", Quote(name), ExperimentList()).
				WithDetail("experiments", Experiments)
		}
	}
	return nil
}

// Validate refuses Agent Defaults that every create would then fail on,
// or that would carry a path or control characters to brokers: a harness
// must be a known one, an image a reference a create takes (CheckImage),
// the broker a bounded reference.
func (d AgentDefaults) Validate() error {
	if d.DefaultHarness != "" {
		if err := CheckHarness("default_harness", d.DefaultHarness); err != nil {
			return err
		}
	}
	if err := CheckImage("default_image", d.DefaultImage); err != nil {
		return err
	}
	return CheckText("default_runtime_broker", d.DefaultRuntimeBroker, MaxRefLen)
}

// Validate checks the defaults an update gives (nil: kept) by the rules
// of AgentDefaults.Validate.
func (d *AgentDefaultsUpdate) Validate() error {
	if d == nil {
		return nil
	}
	given := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return AgentDefaults{DefaultRuntimeBroker: given(d.DefaultRuntimeBroker), DefaultHarness: given(d.DefaultHarness),
		DefaultImage: given(d.DefaultImage)}.Validate()
}

// Validate is the one check of a HubSettingsUpdate on its face.
func (u *HubSettingsUpdate) Validate() error {
	if err := CheckExperiments(u.Experiments); err != nil {
		return err
	}
	return u.AgentDefaults.Validate()
}
